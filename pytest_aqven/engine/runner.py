"""Run a flow, or a from..to range of its top-level nodes, as one coroutine, and record a trace.

A Runner belongs to one attempt; every value of a run lives in its Scope chain and its RunResult, so
many attempts can share one event loop."""
from __future__ import annotations

import json
import time
from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..project import coderefs, specs
from ..project.loader import Flow, Node, Project
from ..project.types import pascal
from ..project.typesmodule import typed_arguments
from ..providers.base import AttemptIdentity, Message, ModelRequest, Provider, ProviderError
from . import prompts, refs, usercode
from .trace import Address, CallTrace, NodeTrace, RunError, RunResult


@dataclass
class Assembly:
    """A subject with one variant's values in its slots (the four factors of the seeds)."""
    flow: Flow
    agents: dict[str, str] = field(default_factory=dict)       # node -> agent id
    prompts: dict[str, Path] = field(default_factory=dict)     # node -> prompt text file
    nodes: dict[str, Node] = field(default_factory=dict)       # node -> alternative node (runs under the slot id)
    flows: dict[str, str] = field(default_factory=dict)        # call node -> the flow it calls instead
    start: str | None = None
    end: str | None = None

    def node(self, node_id: str) -> Node:
        return self.nodes.get(node_id) or self.flow.nodes[node_id]

    @property
    def order(self) -> list[str]:
        order = list(self.flow.spec.order)
        if self.start is None:
            return order
        return order[order.index(self.start): order.index(self.end) + 1]


def to_json(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


@dataclass
class Frame:
    """Where a node runs: its flow (with the variant's slots), the values its references see, its address."""
    assembly: Assembly
    values: ChainMap                 # innermost container first, then top-level outputs, input, run.context
    address: Address
    depth: int = 0                   # call depth
    calls: tuple[str, ...] = ()      # flows being called (cycle guard)

    def enter(self, node_id: str, **address) -> "Frame":
        """The frame of a container's children: their outputs stay in the container's own scope."""
        return Frame(self.assembly, self.values.new_child(), self.address.at(node_id, **address), self.depth,
                     self.calls)


class Runner:
    def __init__(self, project: Project, providers: dict[str, Provider | ProviderError],
                 identity: AttemptIdentity = AttemptIdentity()):
        self.project = project
        self.providers = providers
        self.identity = identity
        self.result = RunResult()
        limits = project.spec.limits if project.spec else None
        self.default_timeout = float((limits and limits.seconds) or usercode.DEFAULT_TIMEOUT)

    # --- the flow ---------------------------------------------------------------------------
    async def run(self, assembly: Assembly, inputs: Any, context: dict | None = None,
                  node_outputs: dict | None = None) -> RunResult:
        result = self.result = RunResult()
        top: dict[str, Any] = {"input": inputs, "run.context": context or {}}
        if assembly.start is not None:
            top.update(node_outputs or {})
        frame = Frame(assembly, ChainMap(top), Address(""))
        started = time.perf_counter()
        try:
            for node_id in assembly.order:
                await self.run_node(frame, node_id)
            if assembly.start is not None:
                result.output = top[assembly.end]
            else:
                result.output = self._returns(assembly.flow, top)
        except RunError as err:
            result.error = err
        result.wall_ms = (time.perf_counter() - started) * 1000
        result.latency_ms = sum(n.latency_ms for n in result.nodes if n.parent is None)
        return result

    def _returns(self, flow: Flow, values) -> Any:
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
        return self._validate(model, out, "RETURNS_UNRESOLVED", f"flow {flow.id} output")

    def _bind(self, bindings, values, node_id: str) -> dict[str, Any]:
        out = {}
        for b in bindings:
            if b.from_ is None:
                out[b.name] = b.value
                continue
            try:
                out[b.name] = refs.resolve(refs.parse(b.from_), values)
            except refs.RefError as exc:
                raise RunError("INPUT_INVALID", f"node {node_id}: input {b.name}: {exc}", node_id) from None
        return out

    def _validate(self, model, value: Any, code: str, what: str) -> Any:
        try:
            if isinstance(model, type) and issubclass(model, BaseModel):
                return to_json(model.model_validate(value))
            return value
        except ValidationError as exc:
            raise RunError(code, f"{what} does not fit its type: {_errors(exc)}") from None

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
            executor = EXECUTORS.get(type(node.spec))
            if executor is None:
                raise RunError("MODEL_FEATURE_UNSUPPORTED",
                               f"node {addr.node}: {node.kind} nodes are not run by this version of pytest-aqven")
            trace.output = await executor(self, frame, node, node_id, trace)
        except RunError as err:
            err.node = err.node or addr.node
            trace.status, trace.error_code, trace.error_message = "failed", err.code, err.message
            trace.error_location = err.location
            raise
        except Exception as exc:  # a bug of the engine: an infrastructure error of this attempt, not a crash
            trace.status, trace.error_code = "failed", "INTERNAL"
            trace.error_message = f"node {addr.node}: {type(exc).__name__}: {exc}"
            raise RunError("INTERNAL", trace.error_message, addr.node) from exc
        finally:
            trace.wall_ms = (time.perf_counter() - started) * 1000
            # a model's latency is what its provider measured or reported, not our overhead
            trace.latency_ms = sum(c.latency_ms for c in trace.calls) if trace.calls else trace.wall_ms
        frame.values[node_id] = trace.output
        return trace.output

    async def call_user(self, fn, kwargs: dict, node: Node, what: str, code: str = "code_invalid") -> Any:
        """A user function with the node's time limit; its failure is an infrastructure error naming where."""
        try:
            return await usercode.call(fn, timeout=self.timeout(node), **kwargs)
        except usercode.UserCallTimeout as exc:
            raise RunError("timeout", f"{what} {exc}") from None
        except usercode.UserCodeError as exc:
            raise RunError(code, f"{what} raised {exc}", location=exc.location, traceback=exc.traceback) from None

    def resolve_code(self, ref: str, node: Node, what: str):
        try:
            return coderefs.resolve(ref, package=self.project.package, root=self.project.root, here=node.py_path)
        except coderefs.CodeRefError as exc:
            raise RunError("E_CODE_REF_UNRESOLVED", f"{what}: {exc}") from None


# --- code nodes -----------------------------------------------------------------------------
async def run_code(runner: Runner, frame: Frame, node: Node, node_id: str, trace: NodeTrace) -> Any:
    spec: specs.CodeNode = node.spec
    kwargs = runner._bind(spec.in_, frame.values, node_id)
    trace.input = kwargs
    fn = runner.resolve_code(spec.run, node, f"node {node_id}")
    value = await runner.call_user(fn, typed_arguments(fn, kwargs), node, f"node {node_id}: {spec.run}")
    model = runner.project.types.record(f"{pascal(frame.assembly.flow.id)}{pascal(node_id)}Out", spec.out)
    return runner._validate(model, to_json(value), "output_invalid", f"node {node_id}: the output")


# --- llm nodes ------------------------------------------------------------------------------
async def run_llm(runner: Runner, frame: Frame, node: Node, node_id: str, trace: NodeTrace) -> Any:
    spec: specs.LlmNode = node.spec
    assembly = frame.assembly
    inference = node.inference
    agent_id = assembly.agents.get(node_id, spec.agent)
    agent_entity = runner.project.agents.get(agent_id)
    if inference is None or agent_entity is None:
        raise RunError("PLAN_MISSING", f"node {node_id}: agent {agent_id} or its inference is missing")
    agent: specs.AgentSpec = agent_entity.spec
    provider = runner.providers.get(agent.provider_id)
    if isinstance(provider, ProviderError):
        raise RunError(provider.code, f"node {node_id}: {provider}")
    if provider is None:
        raise RunError("PLAN_MISSING", f"node {node_id}: provider {agent.provider_id} is not declared in aqven.yaml")
    inputs = runner._bind(spec.in_, frame.values, node_id)
    trace.input = inputs
    stem = spec.inference or node.id
    out_model = runner.project.types.record(f"{pascal(stem)}Out", inference.out)
    prompt_path = assembly.prompts.get(node_id, node.prompt_path)
    try:
        messages = list(prompts.render(prompt_path.read_text(encoding="utf-8"), inference, inputs))
    except (OSError, ValueError, AttributeError) as exc:
        raise RunError("prompt_invalid", f"node {node_id}: {exc}") from None
    settings = agent.settings.model_dump(exclude_none=True, exclude={"provider_options"})
    settings.update(agent.settings.provider_options)
    trace.model = agent.model
    budget = agent.output.retries + 1
    for attempt in range(budget):
        request = ModelRequest(agent.model_name, tuple(messages), settings, out_model.model_json_schema(),
                               agent.output.mode, runner.identity, node_id)
        response = await _complete(runner, provider, request, node, node_id, agent.model, trace)
        call = CallTrace(agent.model, response.outcome, response.tokens_in, response.tokens_out,
                         response.cost_usd, response.cost_source
                         or ("provider" if response.cost_usd is not None else "unknown"),
                         response.latency_ms or 0.0, retries=[list(r) for r in response.retries])
        trace.calls.append(call)
        last = attempt == budget - 1
        if response.outcome != "ok":
            policy = {"refusal": agent.output.on_refusal, "truncated": agent.output.on_truncated,
                      "error": agent.output.on_error}[response.outcome]
            if policy == "retry" and not last:
                continue
            code = {"refusal": "refusal", "truncated": "truncated", "error": "provider_error"}[response.outcome]
            raise RunError(code, f"node {node_id}: the model answered with outcome {response.outcome}"
                           + (f": {response.refusal or response.error}" if response.refusal or response.error else ""))
        value, problem, code = _parse(response, out_model)
        call.schema_valid = problem is None
        if problem is None:
            return value
        if last:
            raise RunError(code if budget == 1 else "MODEL_RETRIES_EXHAUSTED", f"node {node_id}: {problem}")
        messages += [Message("assistant", response.text or json.dumps(response.parsed)),
                     Message("user", f"Your answer does not fit the output fields: {problem}. "
                                     "Answer again with one JSON object.")]
    raise AssertionError("unreachable")


async def _complete(runner: Runner, provider, request: ModelRequest, node: Node, node_id: str, model: str,
                    trace: NodeTrace):
    import asyncio

    seconds = runner.timeout(node)
    try:
        async with asyncio.timeout(seconds):
            return await provider.complete(request)
    except ProviderError as exc:
        trace.calls.append(CallTrace(model, "error", error=str(exc), retries=[list(r) for r in exc.retries]))
        raise RunError(exc.code, f"node {node_id}: {exc}") from None
    except TimeoutError:
        trace.calls.append(CallTrace(model, "error", error=f"no answer within {seconds:g} s"))
        raise RunError("timeout", f"node {node_id}: the model call did not return within {seconds:g} s") from None


def _parse(response, model) -> tuple[Any, str | None, str]:
    raw = response.parsed
    if raw is None:
        text = (response.text or "").strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, f"the answer is not JSON ({exc.msg})", "MODEL_INVALID_JSON"
    try:
        return to_json(model.model_validate(raw)), None, ""
    except ValidationError as exc:
        return None, _errors(exc), "MODEL_SCHEMA_MISMATCH"


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()[:5])


EXECUTORS = {
    specs.CodeNode: run_code,
    specs.LlmNode: run_llm,
}
