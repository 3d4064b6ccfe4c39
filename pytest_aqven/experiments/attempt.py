"""One attempt: run the subject for a case under a variant, classify the outcome, score the checks."""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .. import codes
from ..engine.checks import CheckInvalid, CheckRaised, CheckResult, CompiledCheck
from ..engine.evaluators import EvalContext
from ..engine.runner import Assembly, Runner
from ..engine.trace import RunResult, root_cause
from ..project.model import Project
from ..project.specs import CaseSpec, CodeNode, LlmNode
from ..project.types import pascal
from ..providers.base import AttemptIdentity, Provider, ProviderError
from ..providers.secrets import scrub_data
from ..record import AttemptRecord, CheckScore
from .judges import JudgeCheck, judge_documents
from .plan import SeriesPlan

STORED_TEXT = 64 << 10      # characters of one text of a stored record (outputs, inputs, messages): the rest is cut


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


def typed(model: type[BaseModel] | None, value: Any) -> Any:
    """The output as its typed model when it validates, else a permissive record."""
    if model is not None:
        try:
            return model.model_validate(value)
        except ValidationError:
            pass
    return _Loose.model_validate(value if isinstance(value, dict) else {"value": value})


def output_model(project: Project, assembly: Assembly) -> type[BaseModel] | None:
    try:
        if assembly.end is None:
            return project.types.named(assembly.flow.spec.output)
        node = assembly.node(assembly.end)
        if isinstance(node.spec, CodeNode):
            return project.types.record(f"{pascal(assembly.flow.id)}{pascal(assembly.end)}Out", node.spec.out)
        if isinstance(node.spec, LlmNode) and node.inference:
            return project.types.record(f"{pascal(node.spec.inference or node.id)}Out", node.inference.out)
    except LookupError:
        return None
    return None


async def run_attempt(project: Project, plan: SeriesPlan, checks: list[CompiledCheck] | CheckInvalid,
                      providers: Mapping[str, Provider | ProviderError], variant: str, case: CaseSpec, repeat: int,
                      series_id: str) -> AttemptRecord:
    assembly = plan.variants[variant]
    identity = AttemptIdentity(plan.experiment.id, variant, case.name, repeat)
    started = time.time()
    runner = Runner(project, providers, identity, plan.sources)   # the inputs read at the series start
    result = await runner.run(assembly, case.inputs, case.context, case.node_outputs,
                              case.metadata.get("human_answers"))
    error = root_cause(result.error)
    error_code = error.code if error else None
    error_message = error.message if error else None
    error_public = error.public if error else None
    outcome = codes.outcome_of(error_code)
    scored: dict[str, CheckResult] = {}
    if isinstance(checks, CheckInvalid):
        outcome, error_code, error_message = "infra_error", "E_POLICY_PARAMS", str(checks)
        error_public = error_message
        checks = []
    judge_runs: dict[str, RunResult] = {}
    if outcome == "ok":
        top = {**case.node_outputs, **{n.node: n.output for n in result.nodes if n.parent is None}}
        metadata = {"case": case.name, "tags": dict(case.tags), "split": plan.split, "variant": variant,
                    "repeat": repeat, "node_outputs": top}
        context: EvalContext[Any, Any] = EvalContext(
                              inputs=case.inputs, expected_output=case.expected_output, metadata=metadata,
                              cost_usd=None if result.unpriced_calls else result.cost_usd,  # unknown, never free
                              latency_ms=int(result.latency_ms))
        value = typed(output_model(project, assembly), result.output)
        try:
            for c in checks:
                if isinstance(c, JudgeCheck):
                    documents = judge_documents(case.inputs, top, list(assembly.flow.spec.order), result.output)
                    try:
                        scored[c.id], judge_runs[c.id] = await c.run(project, providers, identity, documents,
                                                                     case.expected_output, case.context)
                    except CheckRaised as exc:
                        if exc.run is not None:     # the judge ran and gave no grade: its trace stays
                            judge_runs[c.id] = exc.run
                        raise
                else:
                    scored[c.id] = await c.score(value, context, runner.default_timeout)
        except CheckRaised as exc:
            outcome, error_code, error_message, scored = "infra_error", exc.code, str(exc), {}
            error_public = exc.public
    if outcome in codes.MODEL_FAILURES:
        scored = {c.id: (CheckResult("failed", 0.0, f"the run produced no output: {error_code}")
                         if c.spec.kind == "binary" else CheckResult("skipped")) for c in checks}
    elif not codes.counted(outcome):
        scored = {c.id: CheckResult("skipped") for c in checks}
    if not codes.counted(outcome):
        passed = None
    else:
        passed = outcome == "ok" and all(r.state == "passed" for c in checks if c.spec.kind == "binary"
                                         for r in [scored[c.id]] if r.state != "skipped")
    tokens_in, tokens_out = result.tokens
    trace = result.to_dict()
    if judge_runs:          # the judges' own runs, kept with the attempt
        trace["judges"] = {cid: r.to_dict() for cid, r in judge_runs.items()}
    # provider and user-code text may carry a key: scrubbed before the record is stored or shown; a 20 MB
    # answer is kept as its first STORED_TEXT characters and its sha256 (the checks scored the whole of it)
    fields = scrub_data({
        "series_id": series_id,
        "experiment": plan.experiment.id,
        "variant": variant,
        "case": case.name,
        "repeat": repeat,
        "split": plan.split,
        "outcome": outcome,
        "passed": passed,
        "checks": {k: {"state": r.state, "value": r.value, "reason": r.reason} for k, r in scored.items()},
        "cost_usd": result.cost_usd,
        "check_cost_usd": sum(r.cost_usd for r in judge_runs.values()),   # series spend, not the cost metric
        "unpriced_calls": result.unpriced_calls + sum(r.unpriced_calls for r in judge_runs.values()),
        "cost_known": result.unpriced_calls == 0,    # the subject's calls all priced: cost metrics may use it
        "cost_bound_usd": result.cost_bound_usd,
        "latency_ms": result.latency_ms,
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "schema_valid_first_try": result.schema_valid_first_try,
        "models": result.models,
        "error_code": error_code,
        "error_message": error_message,
        "error_public": error_public,       # the message without case data: held-out reports show it
        "first_failed_node": result.error.node if result.error else None,
        "started_at": started,
        "finished_at": time.time(),
        "trace": trace,
    }, STORED_TEXT)
    scores = {cid: CheckScore(**c) for cid, c in fields.pop("checks").items()}
    return AttemptRecord(**fields, checks=scores)
