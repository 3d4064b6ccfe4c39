"""Stopping a series as soon as its verdict is decided (`--aqven-stop-early`).

The betting bound takes the cases in the salted order and keeps the maximum of its capital over them, so
with bets sized by the planned number of cases it holds at every prefix of them at once (Ville's
inequality): a confidence sequence. A series may stop at the first complete prefix where that bound alone
decides every cell: confirmed when every cell clears its edge, refuted when the primary lies wholly on the
wrong side. A confirmed verdict of the robust family at the final look requires the same bound to clear,
so stopping adds no error: each tail stays at or below alpha/2. Only cells with a distribution-free bound
may stop a series (rates, scores on a known scale, paired differences of them), and only under the robust
family, whose final look rests on that bound.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import betting
from .edges import threshold_cell
from .model import Cell, Estimate, Guardrail, Look, Pair, SeriesFacts, Threshold
from .pairs import _cell, aligned, contrast, contrast_scale, guardrail_edge, orientation, pair_scale, primary_edge
from .samples import LOWER, MetricInfo, Sample, SampleTable, Scale, bounded_scale, metric_info

METHOD = "betting-sequence"
STOPPABLE_UNITS = frozenset({"rate", "score", "ordinal"})  # rates, and scores that may lie on a known scale


def _metrics(question: Threshold | Pair) -> list[str]:
    if isinstance(question, Threshold):
        return [question.metric]
    return [question.primary] + [g.metric for g in question.guardrails]


def cannot_stop(question: Threshold | Pair | Look, facts: SeriesFacts) -> str | None:
    """Why a series of `question` cannot stop before its planned cases (words completing "it cannot stop
    early: ..."); None when it can, once its cells have a bound (scores: on a known scale)."""
    if isinstance(question, Look):
        return "a look gives no verdict"
    if facts.family != "robust":
        return "the model family's verdict does not rest on the distribution-free bound"
    for metric in _metrics(question):
        info = metric_info(metric, facts.check_kinds, facts.check_scales)
        if info.shape not in ("rate", "mean") or info.unit not in STOPPABLE_UNITS:
            return f"{metric} has no distribution-free bound"
    return None


def _estimate(values: np.ndarray, span: Scale, planned: int, info: MetricInfo, cases: int, attempts: int) -> Estimate:
    """The betting sequence's interval of case values in `span`, taken in the betting order."""
    bet = betting.interval_on(values, *span, planned=planned)
    value, low, high = float(values.mean()), float(bet[0]), float(bet[1])
    return Estimate(value=value, low=low, high=high, method=METHOD, cases=cases, attempts=attempts,
                    n_eff=float(cases), family="robust", unit=info.unit, low_from="betting", high_from="betting",
                    betting_low=low, betting_high=high)


def _in_order(sample: Sample, salt: str) -> np.ndarray:
    return np.array(betting.case_order(salt, sample.cases), dtype=int)


def _threshold_cells(question: Threshold, table: SampleTable, facts: SeriesFacts, planned: int) -> list[Cell] | None:
    info = metric_info(question.metric, facts.check_kinds, facts.check_scales)
    direction = question.direction or info.direction
    cells = []
    for variant in [question.variant] if question.variant else list(facts.variants):
        sample = table.sample(variant, info)
        scale = bounded_scale(sample)
        if scale is None or sample.n_cases == 0:
            return None
        means = sample.case_means()[_in_order(sample, facts.salt)]
        estimate = _estimate(means, scale, planned, info, sample.n_cases, sample.n_attempts)
        cells.append(threshold_cell(question, variant, estimate, direction, facts.family))
    return cells


def _pair_cell(question: Pair, metric: str, direction: str | None, margin: float | None, table: SampleTable,
               facts: SeriesFacts, planned: int, guard: Guardrail | None = None) -> Cell | None:
    info = metric_info(metric, facts.check_kinds, facts.check_scales)
    base, cand = aligned(table.sample(question.baseline, info), table.sample(question.candidate, info))
    scale = pair_scale(base, cand)
    if scale is None or base.n_cases == 0:
        return None
    direction = direction or info.direction
    sign = orientation(direction)
    per_case, span = contrast(cand.case_means(), base.case_means(), sign, contrast_scale(sign, margin), scale)
    estimate = _estimate(per_case[_in_order(base, facts.salt)], span, planned, info, base.n_cases,
                         base.n_attempts + cand.n_attempts)
    if guard is None:
        return _cell(metric, "primary", question, direction, question.margin, False, estimate, primary_edge(question))
    return _cell(metric, "guardrail", question, direction, guard.margin, guard.relative, estimate,
                 guardrail_edge(guard, direction, estimate.unit))


def cells(question: Threshold | Pair, table: SampleTable, facts: SeriesFacts,
          planned: int) -> tuple[list[Cell], list[Cell]] | None:
    """(primaries, guardrails) on the betting sequence alone, the bets sized by the `planned` cases of which
    `table` holds the first in the betting order; None when some cell has no bound (a score off its scale)."""
    if isinstance(question, Threshold):
        primaries = _threshold_cells(question, table, facts, planned)
        return None if primaries is None else (primaries, [])
    primary = _pair_cell(question, question.primary, question.direction, None, table, facts, planned)
    guards = [_pair_cell(question, g.metric, g.direction, g.margin if g.relative else None, table, facts, planned, g)
              for g in question.guardrails]
    if primary is None or any(g is None for g in guards):
        return None
    return [primary], [g for g in guards if g is not None]


def state(primaries: Sequence[Cell], guards: Sequence[Cell]) -> str | None:
    """confirmed when every cell clears, refuted when a primary lies wholly on the wrong side, else None."""
    if any(c.verdict == "fail" for c in primaries):
        return "refuted"
    if all(c.verdict == "pass" for c in [*primaries, *guards]):
        return "confirmed"
    return None


def decided(question: Threshold | Pair | Look, table: SampleTable, facts: SeriesFacts,
            planned: int) -> tuple[list[Cell], list[Cell]] | None:
    """The cells that stop a series at this look, or None when it runs on: `table` holds every attempt of the
    longest complete prefix of the betting order, `planned` the cases the series selected. A prefix with an
    unmeasured attempt never stops a series (its verdict would have to count it against the claim)."""
    if cannot_stop(question, facts) is not None or table.unmeasured().per_case:
        return None
    assert not isinstance(question, Look)
    found = cells(question, table, facts, planned)
    if found is None or state(*found) is None:
        return None
    return found


# ---- the same decision over many simulated series at once (validation, the launch plan)

def clear_and_fail(values: np.ndarray, span: Scale, edge: float, direction: str,
                   planned: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the number of cases after which the betting sequence first clears `edge` on the good side, after which
    it first lies wholly on the wrong side), 0: never; `values` (..., cases) in `span`, in the betting order."""
    lo, hi = span
    up = (np.asarray(values, dtype=float) - lo) / (hi - lo)
    m = (edge - lo) / (hi - lo)
    if direction == LOWER:
        up, m = 1.0 - up, 1.0 - m
    return _after(up, m, planned), _after(1.0 - up, 1.0 - m, planned)


def _after(x: np.ndarray, m: float, planned: int | None) -> np.ndarray:
    if m <= 0:      # below every possible mean: rejected from the first case on
        return np.ones(x.shape[:-1], dtype=int)
    if m >= 1:      # no mean lies above it
        return np.zeros(x.shape[:-1], dtype=int)
    return betting.rejected_after(x, m, planned=planned)


def stop_look(clears: Sequence[np.ndarray], primary_fails: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(the look a series stops at, 0: it runs to the end; whether it stops confirmed) from every cell's clear
    look and the primaries' fail looks (`clear_and_fail`)."""
    never = np.iinfo(np.int64).max
    confirm = np.where(np.all([c > 0 for c in clears], axis=0), np.max(clears, axis=0), never)
    refute = np.min([np.where(f > 0, f, never) for f in primary_fails], axis=0)
    look = np.minimum(confirm, refute)
    return np.where(look == never, 0, look), confirm < refute
