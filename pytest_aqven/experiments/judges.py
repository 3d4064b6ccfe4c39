"""Judge checks: a model (an inference with an agent) scores every attempt.

A judge runs as a one-node flow through the engine's own llm node, so its prompt, output mode,
retries, provider and pricing are exactly those of any llm node, and its trace is an ordinary trace.
Its inputs bind by name from the attempt's scope: the subject input, the outputs of the top-level
nodes (for a range: those given by the case's node_outputs and those that ran, up to `to`), the
subject output, and the case's expected_output when the inference declares a field of that name."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, cast

from .. import codes
from ..engine.checks import CheckInvalid, CheckRaised, CheckResult
from ..engine.runner import Assembly, Runner
from ..engine.sources import LIVE, Sources
from ..engine.trace import RunResult, root_cause
from ..project import specs
from ..project.inferences import inference_flow, inference_path, judge_levels
from ..project.model import Experiment, Project
from ..providers.base import AttemptIdentity, Provider, ProviderError

BINARY_BOUND = 0.5     # a binary judge passes when its score is at least this


@dataclass
class JudgeCheck:
    spec: specs.ExperimentCheck
    assembly: Assembly             # the judge as a one-node flow, run as a range over its node
    inference: specs.InferenceSpec
    inference_path: Path
    sources: Sources = LIVE        # the series' snapshot, given at its start: the judge's prompt is read from it

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def label(self) -> str:
        return f"judge {self.spec.inference} ({self.spec.agent})"

    def bind(self, documents: list[tuple[str, Any]], expected_output: Any) -> dict[str, Any]:
        """Inputs by name from the documents (a later one wins a name); an input called expected_output that no
        document carries is the case's. A null or missing input that is not optional (`T?`) is the check's
        infrastructure error CHECK_INPUT_MISSING, raised before the judge is called: it would grade a blank."""
        scope: dict[str, Any] = {}
        source: dict[str, str] = {}         # input name -> the document that gave it
        for where, doc in documents:
            if isinstance(doc, dict):
                scope.update(doc)
                source.update(dict.fromkeys(doc, where))
        if "expected_output" not in scope:
            scope["expected_output"], source["expected_output"] = expected_output, "the case's expected_output"
        out = {}
        for f in self.inference.in_:
            out[f.name] = scope.get(f.name)
            if out[f.name] is None and not f.type.endswith("?"):
                found = (f"null in {source[f.name]}" if f.name in source else
                         "missing: looked for in " + ", ".join(where for where, _ in documents))
                message = (f"check {self.id}: {self.label} needs input {f.name} ({f.type}), which is {found}; "
                           "the judge was not called")
                raise CheckRaised(message, "CHECK_INPUT_MISSING", message)
        return out

    async def run(self, project: Project, providers: Mapping[str, Provider | ProviderError], identity: AttemptIdentity,
                  documents: list[tuple[str, Any]], expected_output: Any, context: dict | None = None
                  ) -> tuple[CheckResult, RunResult]:
        inputs = self.bind(documents, expected_output)
        runner = Runner(project, providers, identity, self.sources)
        result = await runner.run(self.assembly, inputs, context or {})
        try:
            return self.interpret(result), result
        except CheckRaised as exc:
            exc.run = result
            raise

    def interpret(self, result: RunResult) -> CheckResult:
        """The judge's grade. A judge that gave none is the check's infrastructure error, never a failed check of
        the subject: its own call's code where the call failed for infrastructure (HTTP, key, timeout: the
        judge's plumbing), else CHECK_VALUE_INVALID (it refused, or its answer never fit)."""
        if result.error is not None:
            cause = root_cause(result.error)
            code = cause.code if not codes.counted(codes.outcome_of(cause.code)) else "CHECK_VALUE_INVALID"
            self._no_grade(f"failed ({cause.code}): {cause.message}", code)
        out = result.output
        if not isinstance(out, dict) or not out:
            self._no_grade("returned no output")
        score = out.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            self._no_grade("returned no numeric score")
        if not math.isfinite(score):
            self._no_grade(f"returned the score {score}, not a finite number")
        rationale = out.get("rationale") if isinstance(out.get("rationale"), str) else None
        if self.spec.kind == "binary":
            passed = score >= BINARY_BOUND
            reason = rationale or (None if passed else f"score {score:g} is below the threshold {BINARY_BOUND:g}")
            return CheckResult("passed" if passed else "failed", 1.0 if passed else 0.0, reason)
        return CheckResult("passed", float(score), rationale)


    def _no_grade(self, what: str, code: str = "CHECK_VALUE_INVALID") -> NoReturn:
        message = f"check {self.id}: {self.label} {what}; the check has no grade"
        raise CheckRaised(message, code, f"check {self.id}: {self.label} gave no grade ({code})")


def judge_documents(inputs: Any, node_outputs: dict[str, Any], order: list[str], output: Any
                    ) -> list[tuple[str, Any]]:
    """The documents a judge reads, named, in the order they bind: input, then top-level node outputs in flow
    order, then the subject output (a later document wins a name)."""
    return [("$in", inputs), *((f"${n}.out", node_outputs[n]) for n in order if n in node_outputs), ("$out", output)]


def compile_judge(spec: specs.ExperimentCheck, project: Project, experiment: Experiment) -> JudgeCheck:
    node_id = spec.id
    agent, stem = cast(str, spec.agent), cast(str, spec.inference)    # a judge check has both (its validator)
    try:
        flow = inference_flow(project, f"aqven_judge_{spec.id}", node_id, agent, stem,
                              f"judge of check {spec.id}", [{"name": "score", "from": f"${node_id}.out.score"}],
                              judge_levels(project, experiment), strict=True)
    except LookupError as exc:
        raise CheckInvalid(f"check {spec.id}: {exc}") from None
    node = flow.nodes[node_id]
    return JudgeCheck(spec, Assembly(flow, start=node_id, end=node_id), node.inference, node.path)


def judge_files(project: Project, experiment: Experiment, stem: str) -> list[Path]:
    """The files a judge runs on (its inference and prompt): a changed judge prompt changes the series."""
    try:
        found = inference_path(project, stem, judge_levels(project, experiment), strict=True)
    except LookupError:         # two at one level: aqven check stops the series before it starts
        return []
    if found is None:
        return []
    return [p for p in (found, found.parent / f"{stem}.prompt.md") if p.is_file()]
