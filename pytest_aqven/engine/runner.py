"""Run a flow, or a from..to range of its top-level nodes, and record a trace."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..project import coderefs, specs
from ..project.loader import Flow, Node, Project
from ..project.types import pascal
from ..providers.base import AttemptIdentity, Message, ModelRequest, Provider, ProviderError
from . import prompts, refs
from .trace import CallTrace, NodeTrace, RunError, RunResult


@dataclass
class Assembly:
    """A subject with one variant's values in its slots (the four factors of the seeds)."""
    flow: Flow
    agents: dict[str, str] = field(default_factory=dict)       # node -> agent id
    prompts: dict[str, Path] = field(default_factory=dict)     # node -> prompt text file
    nodes: dict[str, Node] = field(default_factory=dict)       # node -> alternative node (runs under the slot id)
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


class Runner:
    def __init__(self, project: Project, providers: dict[str, Provider | ProviderError], identity: AttemptIdentity = AttemptIdentity()):
        self.project = project
        self.providers = providers
        self.identity = identity

    # --- the flow ---------------------------------------------------------------------------
    def run(self, assembly: Assembly, inputs: Any, context: dict | None = None,
            node_outputs: dict | None = None) -> RunResult:
        result = RunResult()
        roots: dict[str, Any] = {"input": inputs, "run.context": context or {}}
        if assembly.start is not None:
            roots.update(node_outputs or {})
        try:
            for node_id in assembly.order:
                trace = NodeTrace(node_id, assembly.node(node_id).kind)
                result.nodes.append(trace)      # before it runs: a failed node keeps its trace
                self._run_node(assembly, node_id, roots, trace)
                roots[node_id] = trace.output
            if assembly.start is not None:
                result.output = roots[assembly.end]
            else:
                result.output = self._returns(assembly.flow, roots)
        except RunError as err:
            result.error = err
        result.latency_ms = sum(n.latency_ms for n in result.nodes)
        return result

    def _returns(self, flow: Flow, roots: dict) -> Any:
        out = {}
        for b in flow.spec.returns:
            try:
                out[b.name] = refs.resolve(refs.parse(b.from_), roots) if b.from_ else b.value
            except refs.RefError as exc:
                raise RunError("RETURNS_UNRESOLVED", str(exc)) from None
        try:
            model = self.project.types.named(flow.spec.output)
        except LookupError as exc:
            raise RunError("RETURNS_UNRESOLVED", str(exc)) from None
        return self._validate(model, out, "RETURNS_UNRESOLVED", f"flow {flow.id} output")

    def _bind(self, bindings, roots: dict, node_id: str) -> dict[str, Any]:
        values = {}
        for b in bindings:
            if b.from_ is None:
                values[b.name] = b.value
                continue
            try:
                values[b.name] = refs.resolve(refs.parse(b.from_), roots)
            except refs.RefError as exc:
                raise RunError("INPUT_INVALID", f"node {node_id}: input {b.name}: {exc}", node_id) from None
        return values

    def _validate(self, model, value: Any, code: str, what: str) -> Any:
        try:
            if isinstance(model, type) and issubclass(model, BaseModel):
                return to_json(model.model_validate(value))
            return value
        except ValidationError as exc:
            raise RunError(code, f"{what} does not fit its type: {_errors(exc)}") from None

    def _run_node(self, assembly: Assembly, node_id: str, roots: dict, trace: NodeTrace) -> None:
        node = assembly.node(node_id)
        started = time.perf_counter()
        try:
            if isinstance(node.spec, specs.CodeNode):
                trace.output = self._code(assembly.flow, node, node_id, roots)
            elif isinstance(node.spec, specs.LlmNode):
                trace.output = self._llm(assembly, node, node_id, roots, trace)
            else:
                raise RunError("MODEL_FEATURE_UNSUPPORTED",
                               f"node {node_id}: {node.kind} nodes are not run by this version of pytest-aqven", node_id)
        except RunError as err:
            err.node = err.node or node_id
            trace.status, trace.error_code, trace.error_message = "failed", err.code, err.message
            raise
        except Exception as exc:  # a bug of the engine: an infrastructure error of this attempt, not a crash
            trace.status, trace.error_code = "failed", "INTERNAL"
            trace.error_message = f"node {node_id}: {type(exc).__name__}: {exc}"
            raise RunError("INTERNAL", trace.error_message, node_id) from exc
        finally:
            # a model's latency is what its provider measured or reported, not our overhead
            trace.latency_ms = (sum(c.latency_ms for c in trace.calls) if trace.calls
                                else (time.perf_counter() - started) * 1000)

    # --- code nodes -----------------------------------------------------------------------
    def _code(self, flow: Flow, node: Node, node_id: str, roots: dict) -> Any:
        spec: specs.CodeNode = node.spec
        kwargs = self._bind(spec.in_, roots, node_id)
        try:
            fn = coderefs.resolve(spec.run, package=self.project.package, root=self.project.root, here=node.py_path)
        except coderefs.CodeRefError as exc:
            raise RunError("E_CODE_REF_UNRESOLVED", f"node {node_id}: {exc}") from None
        try:
            value = fn(**kwargs)
        except Exception as exc:  # a bug in the flow's own code: an infrastructure error, never a model failure
            raise RunError("code_invalid", f"node {node_id}: {spec.run} raised {type(exc).__name__}: {exc}") from None
        model = self.project.types.record(f"{pascal(flow.id)}{pascal(node_id)}Out", spec.out)
        return self._validate(model, to_json(value), "output_invalid", f"node {node_id}: the output")

    # --- llm nodes ------------------------------------------------------------------------
    def _llm(self, assembly: Assembly, node: Node, node_id: str, roots: dict, trace: NodeTrace) -> Any:
        spec: specs.LlmNode = node.spec
        inference = node.inference
        agent_id = assembly.agents.get(node_id, spec.agent)
        agent_entity = self.project.agents.get(agent_id)
        if inference is None or agent_entity is None:
            raise RunError("PLAN_MISSING", f"node {node_id}: agent {agent_id} or its inference is missing")
        agent: specs.AgentSpec = agent_entity.spec
        provider = self.providers.get(agent.provider_id)
        if isinstance(provider, ProviderError):
            raise RunError(provider.code, f"node {node_id}: {provider}")
        if provider is None:
            raise RunError("PLAN_MISSING", f"node {node_id}: provider {agent.provider_id} is not declared in aqven.yaml")
        inputs = self._bind(spec.in_, roots, node_id)
        stem = spec.inference or node.id
        out_model = self.project.types.record(f"{pascal(stem)}Out", inference.out)
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
                                   agent.output.mode, self.identity, node_id)
            try:
                response = provider.complete(request)
            except ProviderError as exc:
                trace.calls.append(CallTrace(agent.model, "error", error=str(exc)))
                raise RunError(exc.code, f"node {node_id}: {exc}") from None
            call = CallTrace(agent.model, response.outcome, response.tokens_in, response.tokens_out,
                             response.cost_usd, "provider" if response.cost_usd is not None else "unknown",
                             response.latency_ms or 0.0)
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
