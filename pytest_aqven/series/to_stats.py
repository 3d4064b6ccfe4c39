"""What statistics reads of a series: the question of its experiment, and each attempt of its records."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import stats
from ..project.specs import ExperimentSpec, LookQuestion, PairQuestion, ThresholdQuestion
from ..record import AttemptRecord
from ..stats.model import case_key

if TYPE_CHECKING:
    from ..project.loader import RunnableExperiment
    from ..project.model import Project


def question_of(spec: ExperimentSpec) -> stats.Threshold | stats.Pair | stats.Look:
    q = spec.question
    if isinstance(q, LookQuestion):
        return stats.Look()
    if isinstance(q, ThresholdQuestion):
        return stats.Threshold(q.metric, q.above, q.below, q.margin, q.variant, q.direction)
    assert isinstance(q, PairQuestion)
    return stats.Pair(q.kind, q.baseline, q.candidate, q.primary, q.margin, q.direction,
                      tuple(stats.Guardrail(g.metric, g.margin, g.direction, g.relative) for g in q.guardrails))


def facts_of(project: Project, experiment: RunnableExperiment, series_id: str, series: dict, family: str,
             **decided: Any) -> stats.SeriesFacts:
    """What every decision of a series knows before its data: its variants, its checks and their scales, the salt
    of its betting order. The look of --aqven-stop-early uses these alone; `decided` adds what the final one reads
    off the series (spend, inputs, its total)."""
    from ..experiments.checks import check_scales  # noqa: PLC0415  (the experiments' rules: not on import)
    return stats.SeriesFacts(
        series_id=series_id, split=series["split"], variants=tuple(series["variants"]),
        check_kinds={c.id: c.kind for c in experiment.spec.checks}, check_scales=check_scales(project, experiment),
        family=family, salt=stats.experiment_salt(project.package, experiment.id), **decided)


def to_attempt(record: AttemptRecord, salt: str | None = None) -> stats.Attempt:
    """The record as statistics reads it; with a salt, the case is named by its salted key (what a finding
    records), so that deciding again from the finding's data gives the same verdict."""
    if salt is None:
        case = record.case
    else:
        case = case_key(salt, record.case)
    return stats.Attempt(
        variant=record.variant, case=case, repeat=record.repeat, outcome=record.outcome, passed=record.passed,
        checks={k: stats.CheckValue(v.state, v.value) for k, v in record.checks.items()},
        # a call nothing priced makes the attempt's cost unknown: cost metrics leave it out, never count it free
        cost_usd=record.cost_usd if record.cost_known else None,
        latency_ms=record.latency_ms,
        schema_valid_first_try=record.schema_valid_first_try)
