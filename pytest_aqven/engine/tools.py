"""Tools: Python function tools (`tools/<id>.yaml` with `run:`, sync or async), MCP tools (`mcp: {server,
tool}`, or every tool of an agent's `mcp_servers`) over stdio or streamable HTTP with the `mcp` package, and
an agent's subagents (another agent answering an inference).

A tool node calls one tool as a flow step; an agent's tools are offered to the model, which asks for
calls; each runs and its result goes back. A call of a tool under the agent's `approval` runs only when
the case approves it; without an answer it is refused (a series never waits for a person)."""
from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from pydantic import BaseModel, ValidationError

from ..project import specs
from ..project.types import pascal
from ..providers.base import ToolCall, ToolDef
from . import usercode
from .trace import RunError

if TYPE_CHECKING:
    from ..project.loader import Node
    from .runner import Frame, Runner
    from .trace import NodeTrace


@dataclass
class Tool:
    id: str                          # the tool's id in tools/, or "<server>.<tool>" for a server's tool
    definition: ToolDef
    run: Callable[[dict, "Node", str], Awaitable[Any]]     # (arguments, node, node id) -> output
    in_model: type[BaseModel] | None = None


def _json(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def errors_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()[:5])


async def tool(runner: "Runner", tool_id: str, node: "Node", node_id: str) -> Tool:
    entity = runner.project.tools.get(tool_id)
    if entity is None:
        raise RunError("tool_unknown", f"node {node_id}: tool {tool_id} does not exist in tools/")
    spec: specs.ToolSpec = entity.spec
    if spec.mcp is not None:
        connection = await runner.mcp(spec.mcp.server, node, node_id)
        found = connection.tools.get(spec.mcp.tool)
        if found is None:
            raise RunError("tool_unknown", f"node {node_id}: MCP server {spec.mcp.server} has no tool {spec.mcp.tool} "
                           f"(it has {', '.join(sorted(connection.tools)) or 'none'})")
        return Tool(tool_id, ToolDef(tool_id, spec.description, found.definition.parameters), found.run)
    here = runner.project.root / "tools" / f"{tool_id}.py"
    try:
        from ..project import coderefs
        fn = coderefs.resolve(spec.run, package=runner.project.package, root=runner.project.root, here=here)
    except Exception as exc:  # CodeRefError and import errors of the tool's module
        raise RunError("E_CODE_REF_UNRESOLVED", f"node {node_id}: tool {tool_id}: {exc}") from None
    in_model = runner.record(f"{pascal(tool_id)}In", spec.in_) if spec.in_ else None
    out_model = runner.record(f"{pascal(tool_id)}Out", spec.out)

    async def run(arguments: dict, node: "Node", node_id: str) -> Any:
        value = await runner.call_user(fn, arguments, node, f"node {node_id}: tool {tool_id} ({spec.run})")
        return runner._validate(out_model, _json(value), "output_invalid", f"node {node_id}: tool {tool_id}'s output")

    schema = in_model.model_json_schema() if in_model else {"type": "object", "properties": {}}
    return Tool(tool_id, ToolDef(tool_id, spec.description, schema), run, in_model)


async def for_agent(runner: "Runner", agent: specs.AgentSpec, node: "Node", node_id: str,
                    frame: "Frame") -> dict[str, Tool]:
    """Name -> tool for every tool of the agent, of its MCP servers, and for each of its subagents."""
    out: dict[str, Tool] = {}
    for tool_id in agent.tools:
        out[tool_id] = await tool(runner, tool_id, node, node_id)
    for server in agent.mcp_servers:
        connection = await runner.mcp(server, node, node_id)
        for name, found in connection.tools.items():
            out.setdefault(name, found)
    for sub in agent.subagents:
        out[sub.name] = subagent(runner, sub, frame, node_id)
    return out


def subagent(runner: "Runner", sub: specs.Subagent, frame: "Frame", node_id: str) -> Tool:
    """A subagent as a tool: the model passes the inference's inputs, the subagent's agent answers with the
    inference's output, run as an llm node under the calling node (its calls are the attempt's, traced and paid)."""
    from .containers import MAX_CALL_DEPTH
    from .llm import inference_flow

    key = ("subagent", sub.agent, sub.inference)
    flow = runner._records.get(key)
    if flow is None:
        try:
            flow = runner._records[key] = inference_flow(runner.project, f"aqven_subagent_{sub.agent}", sub.name,
                                                         sub.agent, sub.inference, sub.description)
        except LookupError as exc:
            raise RunError("PLAN_MISSING", f"node {node_id}: subagent {sub.name}: {exc}") from None
    inference = flow.nodes[sub.name].inference
    in_model = runner.record(f"{pascal(sub.inference)}In", inference.in_) if inference.in_ else None

    async def run(arguments: dict, node: "Node", node_id: str) -> Any:
        if frame.depth + 1 > MAX_CALL_DEPTH:        # agents that delegate to each other
            raise RunError("E_CALL_DEPTH", f"node {node_id}: subagents are nested deeper than {MAX_CALL_DEPTH}")
        return _json(await runner.run_node(frame.nested(node_id, flow, arguments), sub.name))

    schema = in_model.model_json_schema() if in_model else {"type": "object", "properties": {}}
    return Tool(f"subagent {sub.name}", ToolDef(sub.name, sub.description, schema), run, in_model)


def approval(runner: "Runner", agent: specs.AgentSpec, tool_id: str, address: str, node_id: str
             ) -> tuple[bool, str]:
    """Whether a call of `tool_id` may run: always, unless the agent's approval names the tool; then the
    case's answer under `<node>:<tool>` decides ({"approved": bool, "reason": ...}); no answer refuses it
    (or the on_timeout default decides)."""
    if agent.approval is None or tool_id not in agent.approval.tools:
        return True, "no approval needed"
    for key in (f"{address}:{tool_id}", f"{node_id}:{tool_id}"):
        if key in runner.answers:
            answer = runner.answers[key]
            break
    else:
        policy = agent.approval.on_timeout
        if policy.policy != "default":
            return False, f"nobody approved the call (no answer under {address}:{tool_id})"
        answer = policy.value
    approved = answer.get("approved") if isinstance(answer, dict) else bool(answer)
    reason = answer.get("reason") if isinstance(answer, dict) else None
    return bool(approved), reason or ("approved" if approved else "refused")


async def agent_call(runner: "Runner", agent: specs.AgentSpec, tools: dict[str, Tool], call: ToolCall,
                     node: "Node", node_id: str, address: str, trace: "NodeTrace") -> Any:
    """One tool call the model asked for; what goes back to the model (a result, or an error it can fix)."""
    record = {"tool": call.name, "arguments": call.arguments}
    trace.detail.setdefault("tool_calls", []).append(record)
    found = tools.get(call.name)
    if found is None:
        record["error"] = f"there is no tool {call.name}"
        return {"error": f"there is no tool {call.name} (tools: {', '.join(sorted(tools))})"}
    approved, reason = approval(runner, agent, found.id, address, node_id)
    record["approval"] = reason
    if not approved:
        record["error"] = "refused"
        return {"error": f"the call of {call.name} was not approved: {reason}"}
    arguments = call.arguments
    if found.in_model is not None:
        try:
            arguments = _json(found.in_model.model_validate(arguments))
        except ValidationError as exc:     # the model's mistake: it may try again
            record["error"] = errors_text(exc)
            return {"error": f"invalid arguments for {call.name}: {errors_text(exc)}"}
    output = await found.run(arguments, node, node_id)
    record["output"] = output
    return output


# --- MCP over stdio or streamable HTTP --------------------------------------------------------
class McpConnection:
    """One MCP server for one run. The SDK's context managers must be entered and left by the same task,
    so a task of its own holds them; callers use the session from any task."""

    def __init__(self, server_id: str, spec: specs.McpServerSpec, root) -> None:
        self.server_id, self.spec, self.root = server_id, spec, root
        self.session = None
        self.tools: dict[str, Tool] = {}
        self._closing = asyncio.Event()
        self._ready: asyncio.Future | None = None
        self._task: asyncio.Task | None = None
        self.opening: asyncio.Future | None = None   # the open() every caller awaits

    async def open(self, seconds: float) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(usercode.waiting(self._serve()))   # its pipes, while it runs
        try:
            async with asyncio.timeout(seconds):
                await asyncio.shield(self._ready)
        except TimeoutError:
            await self.close()
            raise RunError("timeout", f"MCP server {self.server_id} did not start within {seconds:g} s") from None

    def _transport(self):
        """The SDK's client for this server's transport: an async context manager of (read, write, ...)."""
        if self.spec.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client
            command = [sys.executable if c == "python" else c for c in self.spec.command]
            return stdio_client(StdioServerParameters(command=command[0], args=command[1:],
                                                      env=dict(self.spec.env) or None, cwd=str(self.root)))
        headers = self._headers()
        from mcp.client import streamable_http
        if hasattr(streamable_http, "streamable_http_client"):                       # mcp 2
            client = streamable_http.create_mcp_http_client(headers=headers)
            return streamable_http.streamable_http_client(self.spec.url, http_client=client)
        return streamable_http.streamablehttp_client(self.spec.url, headers=headers)  # mcp 1

    def _headers(self) -> dict[str, str]:
        """The server's headers, each from `ref:env/NAME` (the environment, then the module root's .env)."""
        from ..providers import secrets
        out = {}
        for header in self.spec.headers:
            name = secrets.env_name(header.value)
            value = secrets.lookup(name, self.root)
            if not value:
                raise RunError("provider_key_missing", f"MCP server {self.server_id}: header {header.name} needs "
                               f"{name}: set it in the environment or in {self.root / '.env'}")
            out[header.name] = value
        return out

    async def _serve(self) -> None:
        try:
            from mcp import ClientSession
            transport = self._transport()
        except ImportError:
            self._ready.set_exception(RunError("MODEL_FEATURE_UNSUPPORTED", f"MCP server {self.server_id}: MCP tools "
                                               "need the optional mcp package: pip install 'pytest-aqven[mcp]'"))
            return
        except RunError as exc:
            self._ready.set_exception(exc)
            return
        try:
            async with transport as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    self.session = session
                    for t in listed.tools:
                        schema = getattr(t, "input_schema", None) or getattr(t, "inputSchema", None) or {}
                        self.tools[t.name] = Tool(f"{self.server_id}.{t.name}",
                                                  ToolDef(t.name, t.description or t.name, schema),
                                                  self._runner_for(t.name))
                    self._ready.set_result(None)
                    await self._closing.wait()
        except Exception as exc:  # the server did not start or broke the protocol: infra error of the run
            if not self._ready.done():
                from ..providers.secrets import scrub
                while isinstance(exc, BaseExceptionGroup) and exc.exceptions:   # the SDK's task groups
                    exc = exc.exceptions[0]
                self._ready.set_exception(RunError("provider_error", scrub(f"MCP server {self.server_id}: "
                                                                           f"{type(exc).__name__}: {exc}")))

    def _runner_for(self, name: str):
        async def run(arguments: dict, node: "Node", node_id: str) -> Any:
            return await self.call(name, arguments, node_id)
        return run

    async def call(self, name: str, arguments: dict, node_id: str) -> Any:
        try:
            result = await self.session.call_tool(name, arguments)
        except Exception as exc:
            raise RunError("provider_error", f"node {node_id}: MCP tool {self.server_id}.{name}: "
                           f"{type(exc).__name__}: {exc}") from None
        if getattr(result, "is_error", None) or getattr(result, "isError", None):
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise RunError("code_invalid", f"node {node_id}: MCP tool {self.server_id}.{name} failed: {text}")
        structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
        if structured is not None:
            return structured
        texts = [getattr(c, "text", None) for c in result.content if getattr(c, "text", None) is not None]
        import json
        try:
            return json.loads(texts[0]) if len(texts) == 1 else {"text": "\n".join(texts)}
        except json.JSONDecodeError:
            return {"text": texts[0]}

    async def close(self) -> None:
        self._closing.set()
        if self._task is not None:
            try:
                async with asyncio.timeout(10):
                    await self._task
            except (TimeoutError, Exception):
                self._task.cancel()
