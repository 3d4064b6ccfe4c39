"""What statistics reads of a series: the question of its experiment, and each attempt of its records."""
from __future__ import annotations

from .. import stats
from ..project.specs import ExperimentSpec, LookQuestion, PairQuestion, ThresholdQuestion
from ..record import AttemptRecord
from ..stats.model import case_key


def question_of(spec: ExperimentSpec) -> stats.Threshold | stats.Pair | stats.Look:
    q = spec.question
    if isinstance(q, LookQuestion):
        return stats.Look()
    if isinstance(q, ThresholdQuestion):
        return stats.Threshold(q.metric, q.above, q.below, q.margin, q.variant, q.direction)
    assert isinstance(q, PairQuestion)
    return stats.Pair(q.kind, q.baseline, q.candidate, q.primary, q.margin, q.direction,
                      tuple(stats.Guardrail(g.metric, g.margin, g.direction, g.relative) for g in q.guardrails))


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
