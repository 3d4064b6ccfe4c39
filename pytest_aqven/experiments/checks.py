"""Checks of an experiment: by evaluator (engine/checks.py) or by judge (judges.py)."""
from __future__ import annotations

from ..engine.checks import CompiledCheck, compile_check as compile_evaluator_check
from ..project.loader import Experiment, Project
from ..project.specs import ExperimentCheck
from .judges import JudgeCheck, compile_judge


def compile_check(spec: ExperimentCheck, project: Project, experiment: Experiment) -> CompiledCheck | JudgeCheck:
    if spec.use is None and spec.run is None:
        return compile_judge(spec, project, experiment)
    return compile_evaluator_check(spec, project, experiment)
