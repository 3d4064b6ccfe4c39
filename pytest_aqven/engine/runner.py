"""Run a flow, or a from..to range of its top-level nodes, as one coroutine, and record a trace.

A Runner belongs to one attempt; every value of a run lives in its Scope chain and its RunResult, so
many attempts can share one event loop."""
from __future__ import annotations

import asyncio
import time
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel, ValidationError

from ..project import coderefs, specs, usercode
from ..project.model import Flow, Node, Project
from ..project.typesmodule import code_stem, typed_arguments
from ..providers.base import AttemptIdentity, Provider, ProviderError
from . import fit, refs
from .frame import Assembly, Frame
from .sources import LIVE, Sources
from .trace import Address, NodeTrace, RunError, RunResult

if TYPE_CHECKING:
    from ..project.yamlpos import YamlDoc
    from .tools import McpConnection


def to_json(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value


class Runner:
    def __init__(self, project: Project, providers: Mapping[str, Provider | ProviderError],
                 identity: AttemptIdentity = AttemptIdentity(), sources: Sources = LIVE) -> None:
        self.project = project
        self.sources = sources                # the series' snapshot: prompts and fragments read from it
        self.providers = providers
        self.identity = identity
        self.result = RunResult()
        self.answers: dict[str, Any] = {}     # human answers of the case: node id -> payload
        limits = project.spec.limits if project.spec else None
        self.default_timeout = float((limits and limits.seconds) or usercode.DEFAULT_TIMEOUT)
        # models, code and compiled checks built from the project's files, shared by every run of the project
        self.cache: dict[tuple, Any] = project.__dict__.setdefault("_engine_cache", {})
        self._mcp: dict[str, Any] = {}        # server id -> open connection (this run's)
        self._http: Any = None                # the HTTP client tool functions get (ToolContext.http)

    # --- the flow ---------------------------------------------------------------------------
    async def run(self, assembly: Assembly, inputs: Any, context: dict | None = None,
                  node_outputs: dict | None = None, answers: dict | None = None) -> RunResult:
        """`node_outputs` feed a range's upstream references and answer human nodes; `answers` are the
        case's scripted human answers (node id -> payload), which win over node_outputs."""
        result = self.result = RunResult()
        self.answers = {**(node_outputs or {}), **(answers or {})}
        top: dict[str, Any] = {"input": inputs, "run.context": context or {}}
        if assembly.start is not None:
            top.update(node_outputs or {})
        frame = Frame(assembly, ChainMap(top), Address(""))
        started = time.perf_counter()
        try:
            if self.sources.conflict:        # this process read other inputs than the series recorded
                raise RunError("inputs_changed", self.sources.conflict)
            if assembly.start is None:     # a range reads only the inputs it needs (its fixtures give the rest)
                top["input"] = self._input(assembly.flow, inputs)
            for node_id in assembly.order:
                await self.run_node(frame, node_id)
            if assembly.end is not None:     # a range (its start is set with it)
                result.output = top[assembly.end]
            else:
                result.output = self.returns(assembly.flow, top)
        except RunError as err:
            result.error = err
        finally:
            await self.close()
        result.wall_ms = (time.perf_counter() - started) * 1000
        result.latency_ms = sum(n.latency_ms for n in result.nodes if n.parent is None)
        return result

    def _input(self, flow: Flow, inputs: Any) -> Any:
        try:
            model = self.project.types.named(flow.spec.input)
        except LookupError as exc:
            raise RunError("INPUT_INVALID", f"flow {flow.id}: input {flow.spec.input}: {exc}") from None
        return self.validate(model, inputs, "INPUT_INVALID", f"flow {flow.id}: the case's inputs")

    def returns(self, flow: Flow, values: Mapping[str, Any]) -> Any:
        out = {}
        for b in flow.spec.returns:
            try:
                out[b.name] = refs.resolve(refs.parse(b.from_), values) if b.from_ else b.value
            except refs.RefError as exc:
                raise RunError("RETURNS_UNRESOLVED", f"flow {flow.id}: returns {b.name}: {exc}") from None
        try:
            model = self.project.types.named(flow.spec.output)
        except LookupError as exc:
            raise RunError("RETURNS_UNRESOLVED", str(exc)) from None
        return self.fit(model, out, "RETURNS_INVALID", f"flow {flow.id}", f"its returns ({flow.spec.output})",
                        doc=flow.doc, at=("returns",), entries=[b.name for b in flow.spec.returns],
                        expected=flow.spec.output)

    def bind(self, bindings: Sequence[Any], frame: Frame, node_id: str) -> dict[str, Any]:
        """A node's inputs from its bindings; a loop's `init` replaces them on the first pass."""
        out = self._bind(bindings, frame.values, node_id)
        if frame.init.get(node_id):
            out.update(frame.init[node_id])
        return out

    def _bind(self, bindings: Sequence[Any], values: Mapping[str, Any], node_id: str) -> dict[str, Any]:
        out = {}
        for b in bindings:
            if isinstance(b, dict):
                b = specs.Binding.model_validate(b)
            if b.from_ is None:
                out[b.name] = b.value
                continue
            try:
                out[b.name] = refs.resolve(refs.parse(b.from_), values)
            except refs.RefError as exc:
                raise RunError("INPUT_INVALID", f"node {node_id}: input {b.name}: {exc}", node_id) from None
        return out

    def record(self, name: str, fields: Sequence[specs.FieldDecl]) -> type[BaseModel]:
        """A record model for a field list, built once per project (pydantic model creation is slow).
        The field list is the project's own (it lives as long as the project), so its id is its key."""
        key = ("record", name, id(fields))
        model = self.cache.get(key)
        if model is None:
            fields = fields if isinstance(fields, list) else list(fields)    # the spec's own list: its id keys
            model = self.cache[key] = self.project.types.record(name, fields)   # the class of <package>.types
        return model

    def find_flow(self, flow_id: str, caller: Flow) -> Flow | None:
        """A called flow: a local flow of the experiment first, then a flow of the project."""
        experiment = self.project.experiments.get(caller.local_to or self.identity.experiment)
        local = experiment.flows.get(flow_id) if experiment is not None else None
        return local or self.project.flows.get(flow_id)

    def case_key(self, value: Any, cases: dict) -> str | None:
        """The switch case for a value: its text (true/false for booleans), or a union variant's name."""
        if isinstance(value, dict):
            unions = [s.discriminator for s in self.project.types.specs.values() if isinstance(s, specs.UnionTypeSpec)]
            for discriminator in dict.fromkeys([*unions, "kind"]):
                name = value.get(discriminator)
                if isinstance(name, str) and name in cases:
                    return name
            return "default" if "default" in cases else None
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return text if text in cases else ("default" if "default" in cases else None)

    def validate(self, model: type[BaseModel], value: Any, code: str, what: str) -> Any:
        try:
            return _coerce(model, value)
        except ValidationError as exc:
            raise RunError(code, f"{what} does not fit its type: {_errors(exc)}") from None

    def fit(self, model: type[BaseModel], value: Any, code: str, who: str, what: str, fields: Any = None, *, fn: Callable[..., Any] | None = None, doc: YamlDoc | None = None,
            at: tuple = (), entries: list[str] | None = None, expected: str | None = None) -> Any:
        """A value on its way out of a node or flow, in its declared type; one that does not fit is a bug of
        the flow (`code`, an infrastructure error) naming each field, its type and where the value was made:
        the `return` of the user's `fn`, or the key `at` of the project file `doc` (with `entries`, the
        names listed under it: the first field at fault)."""
        try:
            return _coerce(model, value)
        except ValidationError as exc:
            if fields is None:
                fields = getattr(model, "__aqven_fields__", ())
            if fn is not None:
                location = fit.returned_at(fn, exc)
            else:
                first = next((e["loc"][0] for e in exc.errors() if e["loc"]), None)
                if entries is not None and first in entries:
                    at = (*at, entries.index(first))
                location = fit.yaml_at(doc, at)
            raise fit.type_error(code, who, what, exc, fields, location, expected) from None

    def timeout(self, node: Node) -> float:
        limits = node.spec.limits
        return float((limits and limits.seconds) or self.default_timeout)

    async def run_node(self, frame: Frame, node_id: str) -> Any:
        """Run one node (top-level or a container's child) in `frame`; store and return its output."""
        node = frame.assembly.node(node_id)
        addr = frame.address.at(node_id)
        trace = NodeTrace(addr.node, node.kind, parent=frame.address.node or None, branch=addr.branch,
                          iteration=addr.iteration, item=addr.item)
        self.result.nodes.append(trace)     # before it runs: a failed node keeps its trace
        started = time.perf_counter()
        try:
            executor = EXECUTORS.get(node.kind)
            if executor is None:
                raise RunError("MODEL_FEATURE_UNSUPPORTED",
                               f"node {addr.node}: {node.kind} nodes are not run by this version of pytest-aqven")
            trace.output = await executor(self, frame, node, node_id, trace)
            trace.status = "ok"
        except RunError as err:
            err.node = err.node or addr.node
            trace.status, trace.error_code, trace.error_message = "failed", err.code, err.message
            trace.error_location = err.location
            raise
        except asyncio.CancelledError:        # a join or a map decided without this execution
            trace.status = "cancelled"
            raise
        except Exception as exc:  # a bug of the engine: an infrastructure error of this attempt, not a crash
            trace.status, trace.error_code = "failed", "INTERNAL"
            trace.error_message = f"node {addr.node}: {type(exc).__name__}: {exc}"
            raise RunError("INTERNAL", trace.error_message, addr.node) from exc
        finally:
            trace.wall_ms = (time.perf_counter() - started) * 1000
            trace.latency_ms = self._latency(trace, node)
        frame.values[node_id] = trace.output
        return trace.output

    def _latency(self, trace: NodeTrace, node: Node) -> float:
        """A model's latency is what its provider measured or reported, not our overhead; a container's is
        its children's: the slowest branch of a parallel (or of a map without a concurrency limit), the sum
        over `concurrency` slots of a map, the sum for a loop, a call or a switch."""
        if trace.calls:
            return sum(c.latency_ms for c in trace.calls)
        children = [n.latency_ms for n in self.result.nodes if n.parent == trace.node]
        if not children:
            return trace.wall_ms
        if trace.kind == "parallel" or (trace.kind == "map" and not node.spec.concurrency):
            return max(children)
        if trace.kind == "map":
            return sum(children) / min(node.spec.concurrency, len(children))
        return sum(children)

    async def call_user(self, fn: Callable[..., Any], kwargs: dict, node: Node, what: str, code: str = "code_invalid",
                        args: tuple = ()) -> Any:
        """A user function with the node's time limit; its failure is an infrastructure error naming where."""
        try:
            return await usercode.call(fn, *args, timeout=self.timeout(node), **kwargs)
        except usercode.UserCallTimeout as exc:
            raise RunError("timeout", f"{what} {exc}", public=f"{what} {exc}") from None
        except usercode.UserCodeError as exc:   # its message may quote the case: held out, the type and where
            public = f"{what} raised {exc.exc_type}" + (f" at {exc.location}" if exc.location else "")
            raise RunError(code, f"{what} raised {exc}", location=exc.location, traceback=exc.traceback,
                           public=public) from None

    async def mcp(self, server_id: str, node: Node, node_id: str) -> McpConnection:
        """This run's connection to an MCP server, started on first use."""
        from .tools import McpConnection

        connection = self._mcp.get(server_id)
        if connection is None:
            entity = self.project.mcp_servers.get(server_id)
            if entity is None:
                raise RunError("tool_unknown", f"node {node_id}: MCP server {server_id} does not exist in mcp/")
            connection = self._mcp[server_id] = McpConnection(server_id, entity.spec, self.project.root)
            connection.opening = asyncio.ensure_future(connection.open(self.timeout(node)))
        await asyncio.shield(cast(asyncio.Future, connection.opening))   # set with the connection (no await between)
        return connection

    async def close(self) -> None:
        """Stop what the run started (MCP servers, the tools' HTTP client)."""
        connections, self._mcp = list(self._mcp.values()), {}
        for connection in connections:
            await connection.close()
        client, self._http = self._http, None
        if client is not None:
            await client.aclose()

    def http(self) -> Any:
        """The run's HTTP client for tool functions, made on first use."""
        if self._http is None:
            import httpx
            self._http = httpx.AsyncClient(timeout=self.default_timeout)
        return self._http

    def blobs(self) -> Any:
        from .tools import LocalBlobStore
        return LocalBlobStore(self.project.root)

    def resolve_code(self, ref: str, node: Node, what: str, here: Path | None = None) -> Callable[..., Any]:
        """A code reference of the node (`here`: the file a bare function name lives in, the node's .py by
        default; an inference's checks and prompt live beside the inference file)."""
        here = here or node.py_path
        key = ("code", ref, here)         # the node lives as long as the project: its files are fixed
        fn = self.cache.get(key)
        if fn is None:
            try:
                fn = coderefs.resolve(ref, package=self.project.package, root=self.project.root, here=here)
            except coderefs.CodeRefError as exc:
                raise RunError("E_CODE_REF_UNRESOLVED", f"{what}: {exc}") from None
            self.cache[key] = fn
        return fn


# --- code nodes -----------------------------------------------------------------------------
async def run_code(runner: Runner, frame: Frame, node: Node, node_id: str, trace: NodeTrace) -> Any:
    spec: specs.CodeNode = node.spec
    kwargs = runner.bind(spec.in_, frame, node_id)
    trace.input = kwargs
    fn = runner.resolve_code(spec.run, node, f"node {node_id}")
    value = await runner.call_user(fn, typed_arguments(fn, kwargs), node, f"node {node_id}: {spec.run}")
    key = ("out", frame.assembly.flow.id, node_id, id(spec.out))
    model = runner.cache.get(key)
    if model is None:       # named once per node, not on every run
        stem = code_stem(runner.project, frame.assembly.flow, node)      # the class user code imports
        model = runner.cache[key] = runner.record(f"{stem}Out", spec.out)
    return runner.fit(model, to_json(value), "CODE_OUTPUT_INVALID", f"node {node_id}",
                      f"the value {spec.run} returned", spec.out, fn=fn)


def _coerce(model: type[BaseModel], value: Any) -> Any:
    """`value` validated into `model` (a record, a scalar or list type), as JSON; ValidationError if it does not fit."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return to_json(model.model_validate(value))
    if model is Any:
        return value
    from pydantic import TypeAdapter
    adapter = TypeAdapter(model)
    return adapter.dump_python(adapter.validate_python(value), mode="json", by_alias=True)


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()[:5])


# --- human and narrow nodes -----------------------------------------------------------------
async def run_human(runner: Runner, frame: Frame, node: Node, node_id: str, trace: NodeTrace) -> Any:
    """Answered from the case (scripted answers, then node_outputs); a series never waits for a person.
    Without an answer the timeout has passed: on_timeout default gives its value, fail and escalate
    (nobody answers in a series) are HUMAN_TIMED_OUT."""
    spec: specs.HumanNode = node.spec
    trace.input = runner.bind(spec.in_, frame, node_id)
    address = frame.address.at(node_id).node
    for key in (address, node_id):
        if key in runner.answers:
            answer = runner.answers[key]
            break
    else:
        if spec.on_timeout.policy != "default":
            raise RunError("HUMAN_TIMED_OUT", f"node {address}: the case has no answer for this human node "
                           f"(give one under node_outputs.{address} or metadata.human_answers.{address})")
        answer = spec.on_timeout.value
        trace.detail["answered_by"] = "on_timeout default"
    try:
        model = runner.project.types.resolve(spec.form)
    except LookupError as exc:
        raise RunError("INPUT_INVALID", f"node {address}: form {spec.form}: {exc}") from None
    return runner.validate(model, answer, "INPUT_INVALID", f"node {address}: the answer of the case")


async def run_narrow(runner: Runner, frame: Frame, node: Node, node_id: str, trace: NodeTrace) -> Any:
    """A dynamic value validated into a registry type; a value that does not fit names its field."""
    spec: specs.NarrowNode = node.spec
    try:
        value = refs.resolve(refs.parse(spec.from_), frame.values)
    except refs.RefError as exc:
        raise RunError("INPUT_INVALID", f"node {node_id}: from: {exc}") from None
    trace.input = value
    try:
        model = runner.project.types.resolve(spec.to)
    except LookupError as exc:
        raise RunError("INPUT_INVALID", f"node {node_id}: to {spec.to}: {exc}") from None
    return runner.fit(model, value, "NARROW_INVALID", f"node {node_id}", f"the value narrowed to {spec.to}",
                      doc=node.doc, at=("to",), expected=spec.to)


async def run_tool(runner: Runner, frame: Frame, node: Node, node_id: str, trace: NodeTrace) -> Any:
    """A tool as a flow step: the inputs validated into the tool's in fields, its output into its out fields."""
    from . import tools

    spec: specs.ToolNode = node.spec
    arguments = runner.bind(spec.in_, frame, node_id)
    trace.input = arguments
    found = await tools.tool(runner, spec.tool, node, node_id)
    if found.in_model is not None:
        arguments = runner.validate(found.in_model, arguments, "INPUT_INVALID", f"node {node_id}: the input of "
                                     f"tool {spec.tool}")
    return await found.run(arguments, node, node_id)


from . import containers, llm  # noqa: E402 - they call back into Runner

EXECUTORS = {
    "code": run_code,
    "llm": llm.run_llm,
    "call": containers.run_call,
    "parallel": containers.run_parallel,
    "map": containers.run_map,
    "loop": containers.run_loop,
    "switch": containers.run_switch,
    "tool": run_tool,
    "human": run_human,
    "narrow": run_narrow,
}
