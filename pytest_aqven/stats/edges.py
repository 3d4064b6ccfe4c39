"""The strict edges of reference §4.5: a cell passes when its interval clears the edge, fails when it lies
wholly on the wrong side, else is unclear. Shared by single-variant cells (verdicts.py) and pairs (pairs.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from .model import Cell, Estimate, Threshold
from .samples import LOWER

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


def interval_verdicts(low: ArrayLike, high: ArrayLike, edge: float) -> NDArray[np.str_]:
    """Strict edges (§4.5), over arrays (simulated series): pass when low > edge, fail when high < edge,
    else unclear; a tie is never decided, and NaN (no bound) decides nothing."""
    lows, highs = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    return np.where(lows > edge, "pass", np.where(highs < edge, "fail", "unclear"))


def interval_verdict(low: float | None, high: float | None, edge: float) -> str:
    """One cell's verdict; None: unbounded on that side."""
    return str(interval_verdicts(bound_or_nan(low), bound_or_nan(high), edge))


def threshold_bound(question: Threshold) -> float:
    """The declared bound, above or below."""
    if question.above is not None:
        return question.above
    return cast(float, question.below)     # a threshold has a bound above or below


def threshold_edge(question: Threshold) -> float:
    """bound + margin above, bound - margin below: the value the interval must clear."""
    if question.above is not None:
        return question.above + question.margin
    return threshold_bound(question) - question.margin


def threshold_verdicts(question: Threshold, low: ArrayLike, high: ArrayLike) -> NDArray[np.str_]:
    """`interval_verdicts` against the threshold's edge, mirrored for a bound below (pass: high < edge)."""
    edge = threshold_edge(question)
    if question.above is not None:
        return interval_verdicts(low, high, edge)
    return interval_verdicts(-np.asarray(high, dtype=float), -np.asarray(low, dtype=float), -edge)


def decided_by(estimate: Estimate, verdict: str, good_side_low: bool) -> str | None:
    """Which family supplied the bound that decided: the good-side bound for pass, the other for fail."""
    if verdict == "unclear":
        return None
    use_low = (verdict == "pass") == good_side_low
    return estimate.low_from if use_low else estimate.high_from


def no_point_pass(estimate: Estimate, verdict: str) -> str:
    """Never confirm from a zero-width interval (a deterministic-looking metric, §11.2)."""
    if verdict == "pass" and estimate.reliability == "degenerate":
        return "unclear"
    return verdict


def no_upper_bound(question: Threshold, verdicts: ArrayLike) -> NDArray[np.str_]:
    """A mean the data cannot bound from above (a cost with no per-attempt bound known, robust family):
    the verdict that rests on its upper bound (pass below, fail above) is unclear, since attempts dearer
    than any measured could lift the mean past the edge (docs/statistics.md, costs)."""
    rests_on_high = "fail" if question.above is not None else "pass"
    out: NDArray[np.str_] = np.where(np.asarray(verdicts) == rests_on_high, "unclear", verdicts)
    return out


def without_candidate_high(direction: str, verdicts: ArrayLike) -> NDArray[np.str_]:
    """A pair on a cost with no per-attempt bound known (robust family): the verdict that needs an upper bound
    of the candidate's cost - pass when lower is better (cheaper, or within the margin), fail when higher - is
    unclear, since a candidate that alone now and then runs away hides it from the sample. The other side
    stands (docs/statistics.md, costs)."""
    rests_on_high = "pass" if direction == LOWER else "fail"
    out: NDArray[np.str_] = np.where(np.asarray(verdicts) == rests_on_high, "unclear", verdicts)
    return out


def bound_or_nan(x: float | None) -> float:
    return np.nan if x is None else x


def open_above(estimate: Estimate, family: str) -> bool:
    """Whether the data cannot bound the mean from above: a cost (cost_usd, cost_of_pass) under the robust
    family with no per-attempt cost bound known. No sample rules out attempts dearer than any it holds
    (1% of attempts at 100x hide from 30 attempts 74% of the time), so a verdict resting on the upper
    bound is not taken (no_upper_bound)."""
    return family == "robust" and estimate.unit == "usd" and estimate.cost_bound is None


def threshold_cell(question: Threshold, variant: str, estimate: Estimate, direction: str, family: str) -> Cell:
    above = question.above is not None
    verdict = str(threshold_verdicts(question, bound_or_nan(estimate.low), bound_or_nan(estimate.high)))
    verdict = no_point_pass(estimate, verdict)
    if open_above(estimate, family):
        verdict = str(no_upper_bound(question, verdict))
    return Cell(
        metric=question.metric, role="primary", variant=variant, baseline=None, direction=direction,
        bound="above" if above else "below", threshold=question.above if above else question.below,
        margin=question.margin, relative=False, estimate=estimate, verdict=verdict,
        edge=threshold_edge(question), decided_by=decided_by(estimate, verdict, above),
    )
