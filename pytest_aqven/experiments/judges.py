"""Judge checks: a model (an inference with an agent) scores every attempt.

A judge runs as a one-node flow through the engine's own llm node, so its prompt, output mode,
retries, provider and pricing are exactly those of any llm node, and its trace is an ordinary trace.
Its inputs bind by name from the attempt's scope: the subject input, the outputs of the top-level
nodes (for a range: those given by the case's node_outputs and those that ran, up to `to`), the
subject output, and the case's expected_output when the inference declares a field of that name."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine.runner import Assembly, Runner
from ..engine.sources import LIVE, Sources
from ..engine.trace import RunResult
from ..project import specs
from ..project.loader import Flow, Node, Project, load_inference
from ..providers.base import AttemptIdentity, Provider
from .checks import CheckInvalid, CheckResult

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

    def bind(self, scope: dict[str, Any], expected_output: Any) -> dict[str, Any]:
        """Inputs by name; a name nothing supplies is null (`aqven check` warns W_JUDGE_INPUT_UNBOUND)."""
        out = {}
        for f in self.inference.in_:
            if f.name == "expected_output" and f.name not in scope:
                out[f.name] = expected_output
            else:
                out[f.name] = scope.get(f.name)
        return out

    async def run(self, project: Project, providers: dict[str, Provider], identity: AttemptIdentity,
                  scope: dict[str, Any], expected_output: Any, context: dict | None = None
                  ) -> tuple[CheckResult, RunResult]:
        runner = Runner(project, providers, identity, self.sources)
        result = await runner.run(self.assembly, self.bind(scope, expected_output), context or {})
        return self.interpret(result), result

    def interpret(self, result: RunResult) -> CheckResult:
        if result.error is not None:
            return CheckResult("error", None, f"{self.label} failed: {result.error}")
        out = result.output
        if not isinstance(out, dict) or not out:
            return CheckResult("error", None, "judge returned no output")
        score = out.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return CheckResult("error", None, "judge returned no numeric score")
        rationale = out.get("rationale") if isinstance(out.get("rationale"), str) else None
        if self.spec.kind == "binary":
            passed = score >= BINARY_BOUND
            reason = rationale or (None if passed else f"score {score:g} is below the threshold {BINARY_BOUND:g}")
            return CheckResult("passed" if passed else "failed", 1.0 if passed else 0.0, reason)
        return CheckResult("passed", float(score), rationale)


def judge_scope(inputs: Any, node_outputs: dict[str, Any], order: list[str], output: Any) -> dict[str, Any]:
    """The documents a judge reads, merged by field name: input, then top-level node outputs in flow
    order, then the subject output (a later document wins a name)."""
    scope: dict[str, Any] = {}
    for doc in [inputs, *(node_outputs.get(n) for n in order if n in node_outputs), output]:
        if isinstance(doc, dict):
            scope.update(doc)
    return scope


def compile_judge(spec: specs.ExperimentCheck, project: Project) -> JudgeCheck:
    found = _inference_file(project, spec.inference)
    if found is None:
        raise CheckInvalid(f"check {spec.id}: inference {spec.inference} has no file "
                           f"{spec.inference}.inference.yaml in the project")
    sink: list = []
    inference, doc = load_inference(project, spec.inference, sink)
    if inference is None:
        raise CheckInvalid(f"check {spec.id}: inference {spec.inference} does not load: "
                           + "; ".join(d.message for d in sink))
    prompt = found.parent / f"{spec.inference}.prompt.md"
    if not prompt.is_file() and inference.prompt is None:
        raise CheckInvalid(f"check {spec.id}: inference {spec.inference} has no prompt file {prompt.name}")
    node_id = spec.id
    llm = specs.LlmNode.model_validate({
        "apiVersion": "aqven/v1", "kind": "Node", "node": "llm", "description": f"judge of check {spec.id}",
        "agent": spec.agent, "inference": spec.inference,
        "in": [{"name": f.name, "from": f"$input.{f.name}"} for f in inference.in_]})
    node = Node(node_id, llm, doc, found, inference, doc, prompt if prompt.is_file() else None)
    flow_spec = specs.FlowSpec.model_validate({
        "apiVersion": "aqven/v1", "kind": "Flow", "description": f"the judge of check {spec.id}",
        "input": "Any", "output": "Any", "order": [node_id],
        "returns": [{"name": "score", "from": f"${node_id}.out.score"}]})
    flow = Flow(f"aqven_judge_{spec.id}", flow_spec, doc, found.parent, {node_id: node})
    return JudgeCheck(spec, Assembly(flow, start=node_id, end=node_id), inference, found)


def _inference_file(project: Project, stem: str) -> Path | None:
    """The file load_inference reads: flows/<stem>.inference.yaml, else the first one in the project."""
    beside = project.root / "flows" / f"{stem}.inference.yaml"
    if beside.is_file():
        return beside
    found = sorted(project.root.glob(f"**/{stem}.inference.yaml"))
    return found[0] if found else None


def judge_files(project: Project, stem: str) -> list[Path]:
    """The files a judge runs on (its inference and prompt): a changed judge prompt changes the series."""
    found = _inference_file(project, stem)
    if found is None:
        return []
    return [p for p in (found, found.parent / f"{stem}.prompt.md") if p.is_file()]
