"""Tools: Python function tools (`tools/<id>.yaml` with `run:`, sync or async), MCP tools (`mcp: {server,
tool}`, or every tool of an agent's `mcp_servers`) over stdio or streamable HTTP with the `mcp` package, and
an agent's subagents (another agent answering an inference).

A tool node calls one tool as a flow step; an agent's tools are offered to the model, which asks for
calls; each runs and its result goes back. A call of a tool under the agent's `approval` runs only when
the case approves it; without an answer it is refused (a series never waits for a person)."""
from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, cast

from pydantic import BaseModel, ValidationError

from ..project import specs, usercode
from ..project.inferences import inference_flow
from ..project.types import pascal
from ..project.typesmodule import typed_arguments
from ..providers.base import ToolCall, ToolDef
from .fit import errors_text
from .trace import MAX_CALL_DEPTH, RunError

if TYPE_CHECKING:
    from ..project.model import Node
    from .frame import Frame, NodeRunner
    from .trace import NodeTrace


@dataclass
class Tool:
    id: str                          # the tool's id in tools/, or "<server>.<tool>" for a server's tool
    definition: ToolDef
    run: Callable[[dict, "Node", str], Awaitable[Any]]     # (arguments, node, node id) -> output
    in_model: type[BaseModel] | None = None


def _json(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value


async def tool(runner: "NodeRunner", tool_id: str, node: "Node", node_id: str) -> Tool:
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
    fn = _function(runner, cast(str, spec.run), here, node_id, f"tool {tool_id}")   # the validator: no mcp, a run
    poll = _function(runner, spec.wait.poll, here, node_id, f"tool {tool_id}: wait.poll") if spec.wait else None
    in_model = runner.record(f"{pascal(tool_id)}In", spec.in_) if spec.in_ else None
    out_model = runner.record(f"{pascal(tool_id)}Out", spec.out)
    with_context = _takes_context(fn, spec)

    async def run(arguments: dict, node: "Node", node_id: str) -> Any:
        what = f"node {node_id}: tool {tool_id} ({spec.run})"
        ctx = tool_context(runner, tool_id, spec, node_id, arguments)
        value = await runner.call_user(fn, typed_arguments(fn, arguments), node, what,
                                       args=(ctx,) if with_context else ())
        if poll is not None:
            value = await _await_job(runner, spec, poll, ctx, value, node, node_id, tool_id)
        return runner.fit(out_model, _json(value), "TOOL_OUTPUT_INVALID", f"node {node_id}",
                          f"the value tool {tool_id} returned", spec.out, fn=fn)

    schema = in_model.model_json_schema() if in_model else {"type": "object", "properties": {}}
    return Tool(tool_id, ToolDef(tool_id, spec.description, schema), run, in_model)


async def for_agent(runner: "NodeRunner", agent: specs.AgentSpec, node: "Node", node_id: str,
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


def _function(runner: "NodeRunner", ref: str, here: Path, node_id: str, what: str) -> Callable[..., Any]:
    try:
        from ..project import coderefs
        return coderefs.resolve(ref, package=runner.project.package, root=runner.project.root, here=here)
    except Exception as exc:  # CodeRefError and import errors of the tool's module
        raise RunError("E_CODE_REF_UNRESOLVED", f"node {node_id}: {what}: {exc}") from None


def _takes_context(fn: Callable[..., Any], spec: specs.ToolSpec) -> bool:
    """AQVEN calls a tool function with its ToolContext first: a first parameter that is none of the
    tool's `in` fields is the context."""
    try:
        first = next(iter(inspect.signature(fn).parameters), None)
    except (TypeError, ValueError):
        return False
    return first is not None and first not in {f.name for f in spec.in_}


# --- what a tool function receives ------------------------------------------------------------
@dataclass(frozen=True)
class ToolAddress:
    """Which execution of the node the call serves (AQVEN's ExecutionAddress fields)."""
    node_id: str
    branch_key: str | None = None
    iteration: int | None = None
    item_index: int | None = None


@dataclass
class ToolContext:
    """The first parameter of a tool function (aqven.runtime.ToolContext): the run and node it serves, an
    HTTP client, the tool's `secrets` by name (from `ref:env/NAME`: the environment, then .env), the blob
    store for media, and the idempotency key of this call (tools with `idempotency_key`)."""
    http: Any = None
    secrets: Mapping[str, str] = field(default_factory=dict)
    blobs: Any = None
    idempotency_key: str | None = None
    run_id: str = ""
    address: ToolAddress | None = None
    missing: Mapping[str, str] = field(default_factory=dict)     # secret name -> its unset ref

    def secret(self, name: str) -> str:
        if name in self.secrets:
            return self.secrets[name]
        if name in self.missing:
            raise LookupError(f"secret {name} of the tool: {self.missing[name]} is not set (environment or .env)")
        raise LookupError(f"the tool declares no secret {name} (secrets: of its tools/<id>.yaml)")


class LocalBlobStore:
    """Media a tool stores (`await ctx.blobs.put(data, media_type, name)`) kept in .aqven/blobs/ of the project,
    by content: the same bytes are one blob."""

    def __init__(self, root: Path) -> None:
        self.folder = root / ".aqven" / "blobs"

    async def put(self, data: bytes, media_type: str, name: str | None = None) -> Any:
        from ..project.builtin_types import MediaValue
        blob_id = "sha256-" + hashlib.sha256(data).hexdigest()
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / blob_id
        if not path.exists():
            path.write_bytes(data)
        return MediaValue.model_validate({"$media": media_type, "blob_id": blob_id, "size_bytes": len(data),
                                          "name": name})

    async def get(self, media: Any) -> bytes:
        blob_id = getattr(media, "blob_id", None) or (media.get("blob_id") if isinstance(media, dict) else None)
        if not blob_id or not re.fullmatch(r"sha256-[0-9a-f]{64}", blob_id):
            raise LookupError(f"{media!r} names no stored blob")
        return (self.folder / blob_id).read_bytes()


def tool_context(runner: "NodeRunner", tool_id: str, spec: specs.ToolSpec, node_id: str, arguments: dict) -> ToolContext:
    from ..providers import secrets
    found, missing = {}, {}
    for binding in spec.secrets:
        name = secrets.env_name(binding.ref)
        value = secrets.lookup(name, runner.project.root) if name else None
        if value is None:
            missing[binding.name] = binding.ref
        else:
            found[binding.name] = value
    key = None
    if spec.idempotency_key:      # the same call (attempt, node, named inputs) gets the same key on a retry
        identity = runner.identity
        basis = {"tool": tool_id, "node": node_id, "attempt": [identity.experiment, identity.variant, identity.case,
                                                              identity.repeat],
                 "inputs": {k: arguments.get(k) for k in spec.idempotency_key}}
        key = hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()
    identity = runner.identity
    return ToolContext(http=runner.http(), secrets=found, blobs=runner.blobs(), idempotency_key=key,
                       run_id=":".join(map(str, (identity.experiment, identity.variant, identity.case,
                                                 identity.repeat))),
                       address=ToolAddress(node_id), missing=missing)


async def _await_job(runner: "NodeRunner", spec: specs.ToolSpec, poll: Callable[..., Any], ctx: ToolContext,
                     handle: Any, node: "Node", node_id: str, tool_id: str) -> Any:
    """A tool with `wait:` starts a job and returns its JobHandle; `wait.poll(ctx, handle)` is called every
    `interval_seconds` until JobDone (its value is the output) or JobFailed, at most `timeout_seconds`."""
    wait = cast(specs.JobWait, spec.wait)       # set: `poll` is its
    deadline = time.monotonic() + wait.timeout_seconds
    while True:
        answer = await runner.call_user(poll, {}, node, f"node {node_id}: tool {tool_id}: poll {wait.poll}",
                                        args=(ctx, handle))
        state = getattr(answer, "state", None) or (answer.get("state") if isinstance(answer, dict) else None)
        if state == "done":
            return getattr(answer, "value", None) if not isinstance(answer, dict) else answer.get("value")
        if state == "failed":
            message = getattr(answer, "message", None) or (answer.get("message") if isinstance(answer, dict) else "")
            raise RunError("tool_job_failed", f"node {node_id}: tool {tool_id}: the job failed: {message}")
        if state != "pending":
            raise RunError("code_invalid", f"node {node_id}: tool {tool_id}: poll {wait.poll} returned {answer!r}, "
                           "not JobPending, JobDone or JobFailed")
        if time.monotonic() + wait.interval_seconds > deadline:
            raise RunError("timeout", f"node {node_id}: tool {tool_id}: the job did not finish within "
                           f"{wait.timeout_seconds} s")
        await asyncio.sleep(wait.interval_seconds)


def subagent(runner: "NodeRunner", sub: specs.Subagent, frame: "Frame", node_id: str) -> Tool:
    """A subagent as a tool: the model passes the inference's inputs, the subagent's agent answers with the
    inference's output, run as an llm node under the calling node (its calls are the attempt's, traced and paid)."""

    key = ("subagent", sub.agent, sub.inference)
    flow = runner.cache.get(key)
    if flow is None:
        try:
            flow = runner.cache[key] = inference_flow(runner.project, f"aqven_subagent_{sub.agent}", sub.name,
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


def approval(runner: "NodeRunner", agent: specs.AgentSpec, tool_id: str, address: str, node_id: str
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


async def agent_call(runner: "NodeRunner", agent: specs.AgentSpec, tools: dict[str, Tool], call: ToolCall,
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

    def __init__(self, server_id: str, spec: specs.McpServerSpec, root: Path) -> None:
        self.server_id, self.spec, self.root = server_id, spec, root
        self.session: Any = None        # the SDK's ClientSession, once open
        self.tools: dict[str, Tool] = {}
        self._closing = asyncio.Event()
        self._ready: asyncio.Future | None = None
        self._task: asyncio.Task | None = None
        self.opening: asyncio.Future | None = None   # the open() every caller awaits

    async def open(self, seconds: float) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(usercode.waiting(self._serve(self._ready)))   # its pipes, while it runs
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
        headers, url = self._headers(), self.spec.url or ""      # set for streamable_http (specs validates it)
        from mcp.client import streamable_http
        if hasattr(streamable_http, "streamable_http_client"):                       # mcp 2
            client = streamable_http.create_mcp_http_client(headers=headers)
            return streamable_http.streamable_http_client(url, http_client=client)
        return streamable_http.streamablehttp_client(url, headers=headers)  # type: ignore[attr-defined]  # mcp 1

    def _headers(self) -> dict[str, str]:
        """The server's headers, each from `ref:env/NAME` (the environment, then the module root's .env)."""
        from ..providers import secrets
        out = {}
        for header in self.spec.headers:
            name = cast(str, secrets.env_name(header.value))      # the spec's pattern: a ref:env/NAME
            value = secrets.lookup(name, self.root)
            if not value:
                raise RunError("provider_key_missing", f"MCP server {self.server_id}: header {header.name} needs "
                               f"{name}: set it in the environment or in {self.root / '.env'}")
            out[header.name] = value
        return out

    async def _serve(self, ready: asyncio.Future) -> None:
        try:
            from mcp import ClientSession
            transport = self._transport()
        except ImportError:
            ready.set_exception(RunError("MODEL_FEATURE_UNSUPPORTED", f"MCP server {self.server_id}: MCP tools "
                                               "need the optional mcp package: pip install 'pytest-aqven[mcp]'"))
            return
        except RunError as exc:
            ready.set_exception(exc)
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
                    ready.set_result(None)
                    await self._closing.wait()
        except Exception as exc:  # the server did not start or broke the protocol: infra error of the run
            if not ready.done():
                from ..providers.secrets import scrub
                cause: BaseException = exc
                while isinstance(cause, BaseExceptionGroup) and cause.exceptions:   # the SDK's task groups
                    cause = cause.exceptions[0]
                ready.set_exception(RunError("provider_error", scrub(f"MCP server {self.server_id}: "
                                                                           f"{type(cause).__name__}: {cause}")))

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
        texts = [text for text in (getattr(c, "text", None) for c in result.content) if text is not None]
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
