"""Checks of an experiment: by evaluator (engine/checks.py) or by judge (judges.py)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.checks import CompiledCheck, compile_check as compile_evaluator_check
from ..project.inferences import judge_levels, load_inference
from ..project.model import Experiment, Project
from ..project.specs import ExperimentCheck
from .judges import JudgeCheck, compile_judge


def compile_check(spec: ExperimentCheck, project: Project, experiment: Experiment) -> CompiledCheck | JudgeCheck:
    if spec.use is None and spec.run is None:
        return compile_judge(spec, project, experiment)
    return compile_evaluator_check(spec, project, experiment)


def check_scales(project: Project, experiment: Experiment) -> dict[str, tuple[float, float]]:
    """The declared range of every ordinal or continuous judge check: the lowest and highest value its
    inference's `score` output may take (`Score`: 0 to 1; a number with minimum and maximum; an enum of
    numbers), as the output is validated. The statistics decide such a score on that range."""
    out = {}
    for check in experiment.spec.checks if experiment.spec is not None else ():
        if check.kind == "binary" or not check.is_judge:
            continue
        inference, _ = load_inference(project, str(check.inference), [], judge_levels(project, experiment))
        score = next((f for f in inference.out if f.name == "score"), None) if inference is not None else None
        if score is None:
            continue
        try:
            schema = project.types.record(f"{check.id}_score", [score]).model_json_schema()
        except Exception:  # a type that does not build: `aqven check` reports it, and the score has no range
            continue
        scale = _range(schema["properties"]["score"])
        if scale is not None:
            out[check.id] = scale
    return out


def _range(schema: Mapping[str, Any]) -> tuple[float, float] | None:
    """(lowest, highest) a JSON schema of a number allows, or None when it is open on a side."""
    for option in schema.get("anyOf", ()):        # an optional score: its non-null branch
        if option.get("type") != "null":
            return _range(option)
    enum = schema.get("enum")
    if enum and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in enum):
        return float(min(enum)), float(max(enum))
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is None or high is None or not low < high:
        return None
    return float(low), float(high)
