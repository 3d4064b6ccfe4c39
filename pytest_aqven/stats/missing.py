"""Attempts selected but not measured never help a claim (docs/statistics.md, "Unmeasured attempts").

A cell is decided on the measured attempts, then again with every unmeasured attempt of its variants
imputed at the value worst for its claim (to keep a pass) or best for it (to keep a fail), per case:
it passes or fails only when both agree. For a metric bounded in [0, 1] those values are 0 and 1, so
the second analysis covers every way the missing attempts could have gone; an unbounded metric has
no worst value, and takes the most extreme value measured on it in the series instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from .model import Cell, Pair, SeriesFacts, Threshold
from .samples import HIGHER, MetricInfo, Sample, SampleTable, Unmeasured, bounded_scale, metric_info


def sides(question: Threshold | Pair, facts: SeriesFacts, against: bool) -> dict[tuple[str, str], bool]:
    """(variant, metric) -> whether its unmeasured attempts are imputed at the high end: against the
    claim (`against`) or for it. A threshold above is hurt by low values, one below by high values; a
    comparison by a worse candidate and a better baseline, each metric in its own direction."""
    if isinstance(question, Threshold):
        tested = [question.variant] if question.variant else list(facts.variants)
        hurt_by_high = question.above is None
        return {(v, question.metric): hurt_by_high == against for v in tested}
    out = {}
    claims = [(question.primary, question.direction)] + [(g.metric, g.direction) for g in question.guardrails]
    for metric, direction in claims:
        higher_is_better = (direction or metric_info(metric, facts.check_kinds).direction) == HIGHER
        out[question.candidate, metric] = higher_is_better != against
        out[question.baseline, metric] = higher_is_better == against
    return out


def imputed(sample: Sample, missing: Mapping[str, int], value: float, passed: float | None = None) -> Sample:
    """The sample with `missing[case]` more attempts of each case at `value` (ratios: each with `passed`);
    a case no attempt measured enters with the imputed ones alone."""
    names = sorted(set(sample.cases) | set(missing))
    measured = dict(zip(sample.cases, sample.values))
    none = np.zeros(0)
    values = [np.concatenate([measured.get(c, none), np.full(missing.get(c, 0), value)]) for c in names]
    passes = None
    if sample.passes is not None:
        measured_passes = dict(zip(sample.cases, sample.passes))
        passes = [np.concatenate([measured_passes.get(c, none), np.full(missing.get(c, 0), passed)]) for c in names]
    return Sample.from_groups(sample.info, names, values, passes)


class ImputedTable:
    """A SampleTable whose samples of the (variant, metric) pairs of `sides` hold the unmeasured
    attempts too, at the low or the high end."""

    def __init__(self, table: SampleTable, sides: Mapping[tuple[str, str], bool], variants: tuple[str, ...]) -> None:
        self.table, self.sides, self.variants = table, sides, variants
        self.missing = table.unmeasured()

    def tallies(self) -> tuple[int, int, int]:
        return self.table.tallies()

    def unmeasured(self) -> Unmeasured:
        return self.table.unmeasured()

    def sample(self, variant: str, info: MetricInfo) -> Sample:
        sample = self.table.sample(variant, info)
        high = self.sides.get((variant, info.name))
        missing = self.missing.per_case.get(variant)
        if high is None or not missing or info.name == "infra_error_rate":   # that one measures them already
            return sample
        end = self._ends(info)
        if end is None:
            return sample
        low_value, high_value = end
        if info.shape == "ratio":   # a ratio of cost to passes: high is a costly failure, low a free pass
            return imputed(sample, missing, high_value, 0.0) if high else imputed(sample, missing, low_value, 1.0)
        return imputed(sample, missing, high_value if high else low_value)

    def _ends(self, info: MetricInfo) -> tuple[float, float] | None:
        """The values a missing attempt could have had: [0, 1] for a rate, a score's scale (declared, or [0, 1]
        when every score measured lies in it), else the range measured on the metric in any variant (None when
        nothing was)."""
        measured = [self.table.sample(v, info) for v in self.variants]
        if info.shape == "rate":
            return 0.0, 1.0
        scales = {bounded_scale(s) for s in measured if s.n_attempts}
        if info.shape == "mean" and len(scales) == 1 and None not in scales:
            return scales.pop()
        values = np.concatenate([s.flat for s in measured])
        return (float(values.min()), float(values.max())) if values.size else None


def affected(question: Threshold | Pair, facts: SeriesFacts, missing: Unmeasured) -> bool:
    """Whether an attempt of a variant the question decides was not measured."""
    variants = {v for v, _ in sides(question, facts, True)}
    return any(missing.per_case.get(v) for v in variants)


def held(measured: Cell, against: Cell, for_claim: Cell) -> Cell:
    """The measured cell, unclear when its pass does not hold with the unmeasured attempts counted against
    the claim, or its fail with them counted for it; such a cell keeps the estimate that undid it."""
    if measured.verdict == "pass" and against.verdict != "pass":
        undone = against
    elif measured.verdict == "fail" and for_claim.verdict != "fail":
        undone = for_claim
    else:
        return measured
    return dataclasses.replace(measured, verdict="unclear", decided_by=None, counted_against=undone.estimate)
