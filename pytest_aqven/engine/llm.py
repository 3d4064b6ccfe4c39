"""llm nodes: prompt, output mode, call outcomes and their policies, repairs, allowed sets, inference checks,
and the agent's tool calls (the model asks, the tool runs, the answer goes back)."""
from __future__ import annotations

import asyncio
import copy
import json
import math
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from ..project import specs, usercode
from ..project.inferences import inference_flow
from ..project.types import Registry, UnknownType, pascal
from ..providers.base import OUTPUT_TOOL, Message, ModelRequest, ModelResponse, ProviderError, ToolDef
from . import prompts, refs
from .fit import errors_text
from .trace import CallTrace, CheckTrace, RunError

if TYPE_CHECKING:
    from ..project.model import Node
    from ..providers.base import Provider
    from .evaluators import Verdict
    from .frame import Frame, NodeRunner
    from .trace import NodeTrace


OUTCOME_CODES = {"refusal": "refusal", "truncated": "truncated", "error": "provider_error"}
MAX_TOOL_ROUNDS = 10          # model turns that only ask for tools, per answer


def to_json(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value


def agent_instructions(runner: "NodeRunner", agent_id: str, agent: specs.AgentSpec) -> str | None:
    text = agent.instructions
    if not text:
        return None
    if agent.instructions_file:
        entity = runner.project.agents[agent_id]
        rel = agent.instructions_file
        path = runner.project.root / rel.removeprefix("@root/") if rel.startswith("@root/") else \
            (runner.project.root / entity.doc.file).parent / rel
        problem = runner.sources.outside(runner.project.root, path)
        if problem is not None:
            raise RunError("prompt_invalid", f"agent {agent_id}: instructions {text} {problem}: refused")
        try:
            return runner.sources.read_text(path).strip()
        except OSError as exc:
            raise RunError("prompt_invalid", f"agent {agent_id}: instructions {text}: {exc.strerror}") from None
    return text


@dataclass
class Problem:
    """Why an ok answer is not taken: the error's detail (naming the field), and the model's feedback when a
    repair is left."""
    code: str
    cause: str
    detail: str
    checks: list = field(default_factory=list)

    @property
    def feedback(self) -> str:
        return f"Your answer is not accepted: {self.detail}"


async def run_llm(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, trace: "NodeTrace") -> Any:
    spec: specs.LlmNode = node.spec
    assembly = frame.assembly
    inference = node.inference
    agent_id = assembly.agents.get(node_id, spec.agent)     # a variant's slot, at any depth of the subject
    agent_entity = runner.project.agents.get(agent_id)
    if inference is None or agent_entity is None:
        raise RunError("PLAN_MISSING", f"node {node_id}: agent {agent_id} or its inference is missing")
    agent: specs.AgentSpec = agent_entity.spec
    inputs = runner.bind(spec.in_, frame, node_id)
    trace.input = inputs
    stem = spec.inference or node.id
    in_model = runner.record(f"{pascal(stem)}In", inference.in_) if inference.in_ else None
    out_model = runner.record(f"{pascal(stem)}Out", inference.out)
    allowed = allowed_sets(inference, inputs, node_id, runner.project.types)
    prompt_path = assembly.prompts.get(node_id, node.prompt_path)
    root = runner.project.root
    if inference.prompt is not None:        # level 3: a Python function renders the messages
        fn = runner.resolve_code(inference.prompt, node, f"node {node_id}: prompt", node.inference_py_path)
        text_inputs = {f.name: inputs.get(f.name) for f in inference.in_ if not prompts.media_kind(f.type)}
        prompt_text = await runner.call_user(fn, text_inputs, node, f"node {node_id}: prompt {inference.prompt}",
                                             "prompt_invalid")
    try:
        if inference.prompt is None:
            if prompt_path is None:         # the loader's E_PROMPT_MISSING: aqven check stops such a run first
                raise RunError("PLAN_MISSING", f"node {node_id}: inference {stem} has no prompt file {stem}.prompt.md")
            escape = runner.sources.outside(root, prompt_path)
            if escape is not None:
                raise prompts.PromptError(f"prompt file {prompt_path.name} {escape}: refused")
            prompt_text = runner.sources.read_text(prompt_path)     # as the series read it at its start
        inf_folder = (root / node.inference_doc.file).parent if node.inference_doc else node.path.parent
        variants = prompts.variant_texts(inference, inputs, inf_folder, stem, root, runner.sources)
        media = prompts.media_parts(inference, inputs, root)
        messages = list(prompts.render(prompt_text, inference, inputs, root=root, variants=variants, allowed=allowed,
                                       instructions=agent_instructions(runner, agent_id, agent), media=media,
                                       sources=runner.sources))
    except prompts.MediaUnavailable as exc:
        raise RunError("media_unavailable", f"node {node_id}: {exc}") from None
    except (OSError, UnicodeDecodeError, prompts.PromptError, AttributeError) as exc:
        raise RunError("prompt_invalid", f"node {node_id}: {exc}") from None
    if variants:
        trace.detail["variants"] = variants
    checks = compile_checks(runner, node, node_id, inference)
    from . import tools as agent_tools

    tools = await agent_tools.for_agent(runner, agent, node, node_id, frame)
    address = frame.address.at(node_id).node
    settings = agent.settings.model_dump(exclude_none=True, exclude={"provider_options"})
    settings.update(agent.settings.provider_options)
    schema = restricted(output_schema(out_model), allowed)
    models = [agent.model, *agent.fallback_models]
    for model_index, model in enumerate(models):
        provider_id, _, model_name = model.partition(":")
        provider = runner.providers.get(provider_id)
        if isinstance(provider, ProviderError):      # the provider's configuration: no case data in it
            raise RunError(provider.code, f"node {node_id}: {provider}", public=f"node {node_id}: {provider}")
        if provider is None:
            raise RunError("PLAN_MISSING", f"node {node_id}: provider {provider_id} is not declared in aqven.yaml")
        mode = resolve_mode(agent.output.mode, provider, model_name)
        tool_defs = tuple(t.definition for t in tools.values())
        if mode == "tool":
            tool_defs += (ToolDef(OUTPUT_TOOL, "Give the final answer: its arguments are the output object.", schema),)
        trace.model = model
        conversation = list(messages)
        budget = agent.output.retries + 1
        answers = 0
        fall_back = False
        while answers < budget:
            answers += 1
            request = ModelRequest(model_name, tuple(conversation), settings, schema, mode, runner.identity, node_id,
                                   tool_defs, agent.output.strict)
            response = await call_model(runner, provider, request, node, node_id, model, trace, tools, conversation,
                                        agent, address)
            call = trace.calls[-1]
            last = answers >= budget
            if response.outcome != "ok":
                policy = {"refusal": agent.output.on_refusal, "truncated": agent.output.on_truncated,
                          "error": agent.output.on_error}[response.outcome]
                call.cause = response.outcome
                raised = isinstance(response, ProviderFailed)   # the provider's own retries are behind it
                if policy == "retry" and not last and not raised:
                    call.action = "retry"
                    continue
                if policy == "fallback" and model_index + 1 < len(models):
                    call.action = "fallback"
                    fall_back = True
                    break
                detail = response.refusal or response.error
                if isinstance(response, ProviderFailed):
                    raise RunError("provider_error", f"node {node_id}: {detail}", public=response.public)
                raise RunError(OUTCOME_CODES[response.outcome], f"node {node_id}: the model {model} answered with "
                               f"outcome {response.outcome}" + (f": {detail}" if detail else ""))
            value, problem = parse(response, out_model, mode)
            call.schema_valid = problem is None
            if problem is None:
                problem = check_allowed(value, allowed)
            if problem is None:
                problem = await run_checks(runner, frame, node, node_id, checks, value, out_model, in_model,
                                           inputs, answers, trace)
            if problem is None:
                trace.detail["answered_by"] = model
                return value
            call.cause = problem.cause
            if problem.code == "check_failed" and not problem.checks:
                raise RunError("check_failed", f"node {node_id}: {problem.detail}")
            if last:
                code = problem.code if budget == 1 or problem.code == "check_failed" else "MODEL_RETRIES_EXHAUSTED"
                raise RunError(code, f"node {node_id}: {problem.detail}")
            call.action = "repair"
            conversation += [Message("assistant", response.text or json.dumps(response.parsed)),
                             Message("user", f"{problem.feedback}. Answer again with one JSON object.")]
        if not fall_back:
            raise AssertionError("unreachable: the loop returns or raises")
    raise AssertionError("unreachable: the last model never falls back")


_SCHEMAS: "weakref.WeakKeyDictionary[type[BaseModel], dict]" = weakref.WeakKeyDictionary()


def output_schema(model: type[BaseModel]) -> dict:
    """The JSON schema of an output model, built once per model: pydantic builds it afresh on every call,
    a quarter of an LLM node's own CPU. Shared by every request: providers only read it."""
    schema = _SCHEMAS.get(model)
    if schema is None:
        schema = _SCHEMAS[model] = model.model_json_schema()
    return schema


def resolve_mode(mode: str, provider: Provider, model_name: str) -> str:
    """`auto` is the provider's call (it knows the model's profile); without one, prompted works everywhere."""
    if mode != "auto":
        return mode
    resolve = getattr(provider, "resolve_mode", None)
    return resolve(model_name) if callable(resolve) else "prompted"


async def call_model(runner: "NodeRunner", provider: Provider, request: ModelRequest, node: "Node", node_id: str, model: str,
                     trace: "NodeTrace", tools: dict, conversation: list[Message], agent: specs.AgentSpec,
                     address: str) -> ModelResponse:
    """One answer of the model. Tool calls it asks for run, their results go back, and it is asked again."""
    for _ in range(MAX_TOOL_ROUNDS + 1):
        response = await complete(runner, provider, request, node, node_id, model, trace)
        asked = [c for c in response.tool_calls if c.name != OUTPUT_TOOL]
        if response.outcome != "ok" or not asked:
            return response
        trace.calls[-1].action, trace.calls[-1].cause = "tools", ", ".join(c.name for c in asked)
        conversation.append(Message("assistant", response.text or "", tool_calls=tuple(response.tool_calls)))
        from .tools import agent_call

        results = await asyncio.gather(*(agent_call(runner, agent, tools, c, node, node_id, address, trace)
                                         for c in asked))
        for c, result in zip(asked, results):
            conversation.append(Message("tool", json.dumps(result, ensure_ascii=False), tool_call_id=c.id))
        request = ModelRequest(request.model, tuple(conversation), request.settings, request.output_schema,
                               request.output_mode, request.attempt, request.node, request.tools, request.strict)
    raise RunError("MODEL_TOOL_LOOP", f"node {node_id}: the model asked for tools {MAX_TOOL_ROUNDS} times "
                   "without answering")


async def complete(runner: "NodeRunner", provider: Provider, request: ModelRequest, node: "Node", node_id: str, model: str,
                   trace: "NodeTrace") -> ModelResponse:
    seconds = runner.timeout(node)
    try:
        async with asyncio.timeout(seconds):
            with usercode.away():
                response = await provider.complete(request)
    except ProviderError as exc:
        # a failed call gave no answer to bill: it costs nothing and is never "unpriced"
        trace.calls.append(CallTrace(model, "error", cost_usd=0.0, cost_source="failed", cost_bound_usd=0.0,
                                     error=str(exc), cause=exc.code, retries=[list(r) for r in getattr(exc, "retries", ())]))
        public = f"node {node_id}: {exc.public}" if exc.public else None
        if exc.code == "provider_error":    # on_error: fallback may still move on to the next model
            return ProviderFailed(finish_reason="error", error=str(exc), cost_usd=0.0, latency_ms=0.0, public=public)
        raise RunError(exc.code, f"node {node_id}: {exc}", public=public) from None
    except TimeoutError:
        trace.calls.append(CallTrace(model, "error", cost_usd=0.0, cost_source="failed", cost_bound_usd=0.0,
                                     error=f"no answer within {seconds:g} s", cause="timeout"))
        message = f"node {node_id}: the model call did not return within {seconds:g} s"
        raise RunError("timeout", message, public=message) from None
    if not isinstance(response, ModelResponse):
        raise RunError("provider_error", f"node {node_id}: provider returned {type(response).__name__}")
    source = response.cost_source or ("provider" if response.cost_usd is not None else "unknown")
    trace.calls.append(CallTrace(model, response.outcome, response.tokens_in, response.tokens_out,
                                 response.cost_usd, source, response.latency_ms or 0.0,
                                 retries=[list(r) for r in response.retries],
                                 cost_bound_usd=response.cost_bound_usd))
    return response


@dataclass(frozen=True)
class ProviderFailed(ModelResponse):
    """A call the provider failed (ProviderError provider_error, after its own transport retries): it is
    not retried on the same model, but `on_error: fallback` moves on to the next model."""
    public: str | None = None        # the error without case data (ProviderError.public)


def parse(response: ModelResponse, model: type[BaseModel], mode: str) -> tuple[Any, Problem | None]:
    raw = response.parsed
    if raw is None and mode == "tool":
        final = [c for c in response.tool_calls if c.name == OUTPUT_TOOL]
        if final:
            raw = final[0].arguments
        elif not (response.text or "").strip():
            return None, Problem("MODEL_NO_STRUCTURED_OUTPUT", "no_structured_output",
                                 f"the answer did not call {OUTPUT_TOOL}")
    if raw is None:
        text = (response.text or "").strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, Problem("MODEL_INVALID_JSON", "invalid_json", f"the answer is not JSON ({exc.msg})")
    try:
        return to_json(model.model_validate(raw)), None
    except ValidationError as exc:
        return None, Problem("MODEL_SCHEMA_MISMATCH", "schema_invalid", errors_text(exc))


# --- allowed sets ---------------------------------------------------------------------------
def allowed_sets(inference: specs.InferenceSpec, inputs: dict, node_id: str, types: Registry) -> dict[str, list]:
    """Output path -> the values it may take: `allowed_sets: [{type, from: "$in...", labels_from?}]`
    restricts every output value of that id type, at any depth (`reply.citations.chunk_id`), to the values
    present in the input."""
    out: dict[str, list] = {}
    for item in inference.allowed_sets:
        try:
            values = refs.resolve(refs.parse(item.from_), {"in": inputs})
        except refs.RefError as exc:
            raise RunError("prompt_invalid", f"node {node_id}: allowed_sets: {exc}") from None
        values = [v for v in (values if isinstance(values, list) else [values]) if v is not None]
        out.update(dict.fromkeys(id_paths(inference.out, item.type, types), values))
    return out


def id_paths(fields: Any, type_id: str, types: Registry, prefix: str = "", outer: frozenset = frozenset()) -> Iterator[str]:
    """The dotted paths of the values of id type `type_id` in a field list, through records, union variants
    and lists (a list's items share its path); a type inside itself is not walked again."""
    for f in fields:
        try:
            base = types.parse_ref(f.type)[0]
        except UnknownType:
            continue
        path = prefix + f.name
        if base == type_id:
            yield path
        spec = types.specs.get(base)
        if base in outer or not isinstance(spec, (specs.RecordTypeSpec, specs.UnionTypeSpec)):
            continue
        nested = spec.fields if isinstance(spec, specs.RecordTypeSpec) else [g for v in spec.variants for g in v.fields]
        yield from id_paths(nested, type_id, types, path + ".", outer | {base})


def values_at(value: Any, path: str) -> list:
    """The values at a dotted path, every list on the way flattened."""
    found = [value]
    for name in path.split("."):
        found = [item.get(name) for item in _flat(found) if isinstance(item, dict)]
    return [v for v in _flat(found) if v is not None]


def _flat(values: list) -> list:
    return [leaf for v in values for leaf in (_flat(v) if isinstance(v, list) else [v])]


def restricted(schema: dict, allowed: dict[str, list]) -> dict:
    """The output schema with each allowed set as the `enum` of its strings, so that a model answering to the
    schema (constrained decoding, a strict provider) picks from the set. Definitions are shared: an id type's
    set holds wherever that type occurs, so restricting a shared definition is what the set says."""
    if not any(allowed.values()):
        return schema
    schema = copy.deepcopy(schema)
    for path, values in allowed.items():
        if not values:          # an empty enum is no schema: the answer check still refuses any value
            continue
        for leaf in _schema_leaves(schema, path.split("."), schema.get("$defs", {})):
            if leaf.get("type") == "string":
                leaf["enum"] = list(values)
    return schema


def _schema_leaves(node: dict, names: list[str], defs: dict) -> Iterator[dict]:
    for part in _alternatives(node, defs):
        if not names:
            yield part
        elif isinstance(prop := part.get("properties", {}).get(names[0]), dict):
            yield from _schema_leaves(prop, names[1:], defs)


def _alternatives(node: dict, defs: dict) -> Iterator[dict]:
    """A schema node's concrete shapes: through $ref, anyOf/oneOf/allOf (optional, union) and array items."""
    if "$ref" in node:
        yield from _alternatives(defs.get(node["$ref"].rsplit("/", 1)[-1], {}), defs)
    elif any(key in node for key in ("anyOf", "oneOf", "allOf")):
        for key in ("anyOf", "oneOf", "allOf"):
            for option in node.get(key, ()):
                yield from _alternatives(option, defs)
    elif isinstance(node.get("items"), dict):
        yield from _alternatives(node["items"], defs)
    else:
        yield node


def check_allowed(value: dict, allowed: dict[str, list]) -> Problem | None:
    for path, values in allowed.items():
        outside = [v for v in values_at(value, path) if v not in values]
        if outside:
            return Problem("MODEL_SCHEMA_MISMATCH", "schema_invalid",
                           f"{path} values outside the allowed set: {', '.join(map(str, outside))} "
                           f"(allowed: {', '.join(map(str, values))})")
    return None


# --- inference checks -----------------------------------------------------------------------
@dataclass
class InferenceCheckRun:
    label: str
    spec: specs.InferenceCheck
    fn: Any
    params: Any


def compile_checks(runner: "NodeRunner", node: "Node", node_id: str, inference) -> list[InferenceCheckRun]:
    """The inference's checks, each compiled once per runner: the evaluators of experiment checks. A judge's
    inference is found as the node's own (Node.levels)."""
    key = ("checks", id(inference))
    if key in runner.cache:
        return runner.cache[key]
    from .checks import CheckInvalid, params_model
    from .evaluators import BUILTINS

    out = []
    for i, check in enumerate(inference.checks):
        if check.use is not None:
            if check.use not in BUILTINS:
                raise RunError("E_POLICY_PARAMS", f"node {node_id}: check {i + 1}: use: {check.use} is not a "
                               "built-in evaluator")
            fn, model = BUILTINS[check.use]
            label = f"use: {check.use}"
        elif check.run is not None:
            fn = runner.resolve_code(check.run, node, f"node {node_id}: check {i + 1}", node.inference_py_path)
            label = check.run
            try:
                model = params_model(fn, label)
            except CheckInvalid as exc:
                raise RunError("E_POLICY_PARAMS", f"node {node_id}: {exc}") from None
        else:                       # a judge: the check's agent answers its inference, run as an llm node
            label = f"judge {check.inference} ({check.agent})"
            try:
                fn = inference_flow(runner.project, f"aqven_check_{node_id}_{i + 1}", f"check{i + 1}_{check.inference}",
                                    check.agent, check.inference, f"check {i + 1} of node {node_id}",
                                    levels=node.levels)
            except LookupError as exc:
                raise RunError("PLAN_MISSING", f"node {node_id}: check {label}: {exc}") from None
            out.append(InferenceCheckRun(label, check, fn, None))
            continue
        try:
            params = model.model_validate(check.with_ or {})
        except ValidationError as exc:
            raise RunError("E_POLICY_PARAMS", f"node {node_id}: check {label}: with: {errors_text(exc)}") from None
        out.append(InferenceCheckRun(label, check, fn, params))
    runner.cache[key] = out
    return out


async def run_judge(runner: "NodeRunner", frame: "Frame", node_id: str, check: InferenceCheckRun, inputs: dict,
                    value: dict) -> Verdict:
    """A judge check of an inference: its inputs bind by name to the in and out of the evaluated inference; it
    passes when its score reaches the check's threshold (0.5 without one). Its calls are the attempt's."""
    from .evaluators import Verdict

    flow = check.fn
    (judge_id,) = flow.nodes
    scope = {**inputs, **value}
    bound = {f.name: scope.get(f.name) for f in flow.nodes[judge_id].inference.in_}
    for f in flow.nodes[judge_id].inference.in_:
        if bound[f.name] is None and not f.type.endswith("?"):     # the judge would grade a blank: not called
            message = (f"node {node_id}: check {check.label} needs input {f.name} ({f.type}), which is "
                       f"{'null' if f.name in scope else 'missing'} in the in and out of node {node_id}; the judge "
                       "was not called")
            raise RunError("CHECK_INPUT_MISSING", message, public=message)
    out = await runner.run_node(frame.nested(node_id, flow, bound), judge_id)
    score = out.get("score") if isinstance(out, dict) else None
    if isinstance(score, bool) or not isinstance(score, (int, float)):
        raise RunError("check_failed", f"node {node_id}: check {check.label} returned no numeric score")
    rationale = out.get("rationale") if isinstance(out.get("rationale"), str) else None
    bound_at = check.spec.threshold if check.spec.threshold is not None else 0.5
    return Verdict(passed=score >= bound_at, score=float(score),
                   reason=rationale or f"score {score:g} against the threshold {bound_at:g}")


async def run_checks(runner: "NodeRunner", frame: "Frame", node: "Node", node_id: str, checks: list[InferenceCheckRun],
                     value: dict, out_model, in_model, inputs: dict, attempt: int, trace: "NodeTrace"
                     ) -> Problem | None:
    if not checks:
        return None
    from .evaluators import EvalContext, Verdict

    typed_out = out_model.model_validate(value)
    try:
        typed_in = in_model.model_validate(inputs) if in_model is not None else inputs
    except ValidationError:
        typed_in = inputs
    context: EvalContext[Any, Any] = EvalContext(inputs=typed_in, metadata={"node": node_id}, attempt=attempt)
    retry: list[tuple[InferenceCheckRun, Any]] = []     # (the check, its verdict)
    fail: list[tuple[InferenceCheckRun, Any]] = []
    for check in checks:
        if check.spec.inference is not None:
            verdict = await run_judge(runner, frame, node_id, check, inputs, value)
        else:
            verdict = await runner.call_user(check.fn, {}, node, f"node {node_id}: check {check.label}",
                                             "E_POLICY_RAISED", args=(typed_out, context, check.params))
        if not isinstance(verdict, Verdict) and type(verdict).__name__ != "Verdict":
            raise RunError("E_POLICY_RAISED", f"node {node_id}: check {check.label} did not return a Verdict")
        score = verdict.score
        if not isinstance(verdict.passed, bool) or score is not None and (
                isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score)):
            # bool(nan) is True and nan >= threshold is False: either would score silently
            raise RunError("CHECK_VALUE_INVALID", f"node {node_id}: check {check.label} gave passed {verdict.passed!r} "
                           f"and score {score!r}: passed must be a boolean and score a finite number")
        passed = verdict.passed
        if check.spec.threshold is not None and verdict.score is not None:
            passed = verdict.score >= check.spec.threshold
        trace.checks.append(CheckTrace(check.label, check.spec.on_fail, passed, verdict.reason, attempt))
        if not passed:
            (retry if check.spec.on_fail == "retry" else fail if check.spec.on_fail == "fail" else []).append(
                (check, verdict))
    if fail:
        check, verdict = fail[0]
        return Problem("check_failed", f"check {check.label}", f"check {check.label} failed: {verdict.reason or ''}")
    if retry:
        feedback = "; ".join(f"check {c.label} failed: {v.reason or 'no reason given'}" for c, v in retry)
        return Problem("check_failed", f"check {retry[0][0].label}", feedback,
                       checks=[c for c, _ in retry])
    return None
