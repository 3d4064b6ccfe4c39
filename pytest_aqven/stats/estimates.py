"""Per-metric estimates: which interval for which metric and question (statistics.md §11.2).

Single variant: M1 (rates), t on case means (bounded scores), skewness-corrected t on case means
(positive unbounded means: cost, open-scale scores), M5 (quantiles), M7 (cost_of_pass).
Two variants on the same cases: M2 (rates), paired t (means), M6 (quantiles), paired linearised
ratio (cost_of_pass); relative margins as a linear contrast. For metrics bounded in [0, 1] the
"robust" family takes the hull with the betting interval over case values in keyed-hash order.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, SupportsFloat

import numpy as np
import numpy.typing as npt

from . import betting, intervals
from .betting import Bet
from .model import Estimate
from .samples import Sample, Scale, bounded_scale, positive_unbounded

MIN_MEAN_CASES = 2
FEW_CASES = 30  # below this, means, ratios and tail quantiles are flagged reliability "low"
LEFT_SKEWED_LOGS = -1.0  # case log costs skewed below this are not lognormal (exponential, Weibull: -1.14)
RESAMPLES = 10_000  # M6 bootstrap size (statistics.md §10: B >= 2000; V10 budget at 10k)


def stat_seed(salt: str, *parts: str, data: tuple[Sample, ...] = ()) -> int:
    """Bootstrap seed from the salt (package and experiment), the metric and variant names and the
    data itself (case names, attempts per case, values): the same data gives the same interval,
    whatever the series id."""
    digest = hashlib.sha256("|".join([salt, *parts]).encode())
    for sample in data:  # values sorted within each case: the order repeats finished in does not matter
        digest.update("\x00".join(sample.cases).encode() + b"\x01")
        digest.update(np.ascontiguousarray(sample.sizes, dtype="<i8").tobytes())
        within = np.lexsort((sample.flat, sample.case_index))
        digest.update(np.ascontiguousarray(sample.flat[within], dtype="<f8").tobytes())
    return int.from_bytes(digest.digest()[:8], "big")


def degenerate(reason: str, method: str, sample_cases: int, attempts: int, unit: str, value: float | None = None,
               family: str = "model") -> Estimate:
    return Estimate(
        value=value, low=None, high=None, method=method, cases=sample_cases, attempts=attempts,
        reliability="degenerate", family=family, degenerate=reason, unit=unit,
    )


def _f(x: SupportsFloat | None) -> float | None:
    if x is None:
        return None
    number = float(x)
    return number if math.isfinite(number) else None   # inf: unbounded on that side


def with_hull(
    value: SupportsFloat | None, bounds_low: SupportsFloat | None, bounds_high: SupportsFloat | None, *, method: str,
    cases: int, attempts: int, n_eff: SupportsFloat | None, reliability: str, unit: str, family: str,
    bet: Bet | None, seed: int | None = None, resamples: int | None = None, cost_bound: float | None = None,
) -> Estimate:
    """Build an Estimate; under the robust family widen to the hull with the betting interval `bet`."""
    low, high = _f(bounds_low), _f(bounds_high)
    fields: dict[str, Any] = dict(
        value=_f(value), method=method, cases=cases, attempts=attempts, n_eff=_f(n_eff),
        reliability=reliability, unit=unit, seed=seed, resamples=resamples, model_low=low, model_high=high,
        cost_bound=cost_bound,
    )
    if family != "robust" or bet is None:
        return Estimate(low=low, high=high, family="model", low_from="model", high_from="model", **fields)
    b_low, b_high = float(bet[0]), float(bet[1])
    low_from = "model" if low is not None and low <= b_low else "betting"
    high_from = "model" if high is not None and high >= b_high else "betting"
    hull_low = low if low_from == "model" else b_low
    hull_high = high if high_from == "model" else b_high
    if reliability == "degenerate" and hull_high is not None and hull_low is not None and hull_high > hull_low:
        fields["reliability"] = "low"  # the betting interval has width even where the model has none
    return Estimate(
        low=hull_low, high=hull_high, family="robust", low_from=low_from, high_from=high_from,
        betting_low=b_low, betting_high=b_high, **fields,
    )


def hull(model_low: npt.ArrayLike, model_high: npt.ArrayLike, bet_low: npt.ArrayLike,
         bet_high: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The robust family's interval: the hull of the model-based and the betting interval."""
    return np.minimum(model_low, bet_low), np.maximum(model_high, bet_high)


@dataclass(frozen=True)
class Interval:
    """One interval the verdicts use, over leading axes (one series, or many simulated ones at once).

    The model-based bounds, and under the robust family where it applies the betting interval `bet`;
    `low`/`high` are what a verdict compares with its edge: their hull, or the model bounds alone.
    """

    value: np.ndarray
    model_low: np.ndarray
    model_high: np.ndarray
    bet: Bet | None = None
    n_eff: np.ndarray | None = None
    flag: np.ndarray | bool = False  # M1 / M2: low reliability

    @property
    def low(self) -> np.ndarray:
        return self.model_low if self.bet is None else hull(self.model_low, self.model_high, *self.bet)[0]

    @property
    def high(self) -> np.ndarray:
        return self.model_high if self.bet is None else hull(self.model_low, self.model_high, *self.bet)[1]


def in_order(x: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """The cases (last axis) in the betting interval's order; None: as given (simulated i.i.d. cases)."""
    return x if order is None else x[..., order]


def rate_interval(k: npt.ArrayLike, n: npt.ArrayLike, family: str, order: np.ndarray | None = None,
                  bet: Bet | None = None) -> Interval:
    """Single rate (threshold questions, the metrics table): M1, hulled under "robust" with the betting
    interval over the case rates taken in `order` (`bet`: that interval, when computed already)."""
    p, low, high, n_eff, flag = intervals.m1(k, n)
    if family != "robust":
        return Interval(p, low, high, None, n_eff, flag)
    if bet is None:
        bet = betting.interval(in_order(np.asarray(k, float) / np.asarray(n, float), order))
    # every case passes (or fails): M1 is then the exact bound 0.025^(1/C), which decides alone
    bet = (np.where(p >= 1, low, bet[0]), np.where(p <= 0, high, bet[1]))
    return Interval(p, low, high, bet, n_eff, flag)


def mean_interval(x: npt.ArrayLike, family: str, scale: Scale | None, skewed: bool = False,
                  order: np.ndarray | None = None, bet: Bet | None = None) -> Interval:
    """Mean of case means: t(C-1), or the skewness-corrected t for positive unbounded metrics (`skewed`).
    On a known `scale` the bounds are clipped to it, and under "robust" hulled with the betting interval
    on that scale (`bet`: that interval, when computed already)."""
    if skewed:
        mean, low, high = intervals.skew_t_mean(x, right_skewed=True)
    else:
        mean, low, high, _ = intervals.t_mean(x)
    if scale is None:
        return Interval(mean, low, high)
    low, high = np.clip(low, *scale), np.clip(high, *scale)
    if family != "robust":
        return Interval(mean, low, high)
    if bet is None:
        bet = betting.interval_on(in_order(np.asarray(x, float), order), *scale)
    return Interval(mean, low, high, bet)


LogSpread = tuple[np.ndarray, np.ndarray, int, float]  # intervals.lognormal_mean_high's arguments


def log_spread(sample: Sample) -> LogSpread | None:
    """The log costs' case means, within-case sum of squares, its degrees of freedom and the attempts per
    case (harmonic mean); None when some cost is not positive (no log scale)."""
    if not np.all(sample.flat > 0):
        return None
    logs = np.log(sample.flat)
    case_logs = np.bincount(sample.case_index, weights=logs) / sample.sizes
    within = float(((logs - case_logs[sample.case_index]) ** 2).sum())
    repeats = float(len(sample.sizes) / np.sum(1.0 / sample.sizes))
    return case_logs, np.asarray(within), int(sample.sizes.sum() - len(sample.sizes)), repeats


def usable_bound(cost_bound: float | None, family: str, *samples: Sample) -> float | None:
    """The per-attempt cost bound a robust cost interval rests on: None under "model", when none is
    known, or when an attempt cost more (the bound does not hold, so it decides nothing)."""
    if family != "robust" or cost_bound is None or any(float(s.flat.max()) > cost_bound for s in samples):
        return None
    return cost_bound


def cost_interval(means: npt.ArrayLike, logs: LogSpread | None, family: str, order: np.ndarray | None = None,
                  bound: float | None = None) -> Interval:
    """cost_usd: the skewness-corrected t on case means, its upper bound raised to the lognormal bound
    (`logs`: `log_spread`'s, None when some cost is 0) so heavy right tails keep their 2.5%, unless the
    log costs are clearly left-skewed (not lognormal: many costs near 0, where a lognormal fit overstates
    the right tail); under "robust" with a known per-attempt cost bound, hulled with the betting interval
    on [0, bound]."""
    mean, low, high = intervals.skew_t_mean(means, right_skewed=True)
    if logs is not None:
        lognormal = intervals.skewness(logs[0]) >= LEFT_SKEWED_LOGS
        high = np.where(lognormal, np.maximum(high, intervals.lognormal_mean_high(*logs)), high)
    if family != "robust" or bound is None:
        return Interval(mean, low, high)
    return Interval(mean, low, high, betting.interval_on(in_order(np.asarray(means, float), order), 0.0, bound))


def ratio_interval(y: npt.ArrayLike, x: npt.ArrayLike, family: str = "model", order: np.ndarray | None = None,
                   bound: float | None = None, attempts: npt.ArrayLike | None = None) -> Interval:
    """cost_of_pass, a ratio of case totals (costs y, passes x): M7; under "robust" with a known per-attempt
    cost bound (`attempts`: per case), hulled with the ratio of betting intervals, each at alpha / 2 (a union
    bound): the mean cost per attempt on [0, bound] over the pass rate on [0, 1]."""
    ratio, low, high = intervals.m7(y, x)
    if family != "robust" or bound is None or attempts is None:
        return Interval(ratio, low, high)
    n = np.asarray(attempts, float)
    cost_low, cost_high = betting.interval_on(in_order(np.asarray(y, float) / n, order), 0.0, bound,
                                              intervals.ALPHA / 2)
    pass_low, pass_high = betting.interval(in_order(np.asarray(x, float) / n, order), intervals.ALPHA / 2)
    with np.errstate(divide="ignore"):
        bet = (cost_low / pass_high, np.where(pass_low > 0, cost_high / np.maximum(pass_low, 1e-300), np.inf))
    return Interval(ratio, low, high, bet)


def clears(model_low: np.ndarray, model_high: np.ndarray, values: np.ndarray, span: tuple[float, float],
           family: str, bounded: bool, edge: float, above: bool) -> np.ndarray:
    """Whether the (hulled) interval clears `edge` on the good side, without computing the hull.

    The model bound must clear the edge and, under "robust" for bounded values in `span`, the betting
    test must reject it as well: the same decision as `low > edge` (above) or `high < edge` (below) on
    the hull, at the cost of one capital process instead of a bisection. The planner uses it.
    """
    lo, hi = span
    ok = model_low > edge if above else model_high < edge
    if family != "robust" or not bounded:
        return ok
    if above:
        m = (edge - lo) / (hi - lo)
        scaled = (values - lo) / (hi - lo)
    else:
        m = (hi - edge) / (hi - lo)
        scaled = (hi - values) / (hi - lo)
    if m < 0:
        return ok  # the edge lies below every possible mean: the betting bound clears it
    cleared: np.ndarray = ok & betting.rejects(scaled, max(m, 1e-12))
    return cleared


def ordered(sample: Sample, salt: str) -> np.ndarray:
    order: np.ndarray = np.array(betting.case_order(salt, sample.cases), dtype=int)
    return order


def betting_input(sample: Sample, salt: str, family: str) -> np.ndarray | None:
    """The case values `single` runs the betting interval on, rescaled to [0, 1] from the metric's scale
    and in keyed-hash order, or None when the robust hull does not apply: rates, and means on a known
    scale with enough cases (`on_scale` maps its interval back)."""
    if family != "robust" or sample.n_cases == 0:
        return None
    shape, scale = sample.info.shape, bounded_scale(sample)
    if scale is not None and (shape == "rate" or (shape == "mean" and sample.n_cases >= MIN_MEAN_CASES)):
        low, high = scale
        values: np.ndarray = (sample.case_means()[ordered(sample, salt)] - low) / (high - low)
        return values
    return None


def on_scale(bet: Bet | None, scale: Scale | None) -> Bet | None:
    """A betting interval on [0, 1] (of `betting_input`) on the metric's own scale."""
    if bet is None or scale is None:
        return bet
    low, high = scale
    return low + (high - low) * bet[0], low + (high - low) * bet[1]


def single(sample: Sample, salt: str, family: str = "robust", bet: Bet | None = None,
           cost_bound: float | None = None) -> Estimate:
    """The single-variant estimate of one metric (threshold questions and the metrics table).

    `bet`: the betting interval of `betting_input(sample, ...)` when the caller computed it already
    (the metrics table computes them all in one vectorised call); otherwise computed here.
    `cost_bound`: the most one attempt can cost, when known (cost_usd only; ignored if a cost passes it).
    """
    info = sample.info
    cases, attempts, unit = sample.n_cases, sample.n_attempts, info.unit
    if info.shape == "rate":
        if cases == 0:
            return degenerate("no_data", "M1", 0, 0, unit)
        iv = rate_interval(sample.sums(), sample.counts(), family, ordered(sample, salt), bet)
        return with_hull(iv.value, iv.model_low, iv.model_high, method="M1", cases=cases, attempts=attempts,
                         n_eff=iv.n_eff, reliability="low" if iv.flag else "ok", unit=unit, family=family, bet=iv.bet)
    if info.shape == "mean":
        method = "t-case-means"
        if cases == 0:
            return degenerate("no_data", method, 0, 0, unit)
        means = sample.case_means()
        if cases < MIN_MEAN_CASES:
            return degenerate("too_few_cases", method, cases, attempts, unit, value=_f(means.mean()))
        value = float(means.mean())
        reliability = "degenerate" if float(np.ptp(means)) == 0.0 else ("low" if cases < FEW_CASES else "ok")
        if info.unit == "usd":
            bound = usable_bound(cost_bound, family, sample)
            iv = cost_interval(means, log_spread(sample), family, ordered(sample, salt), bound)
            return with_hull(value, iv.model_low, iv.model_high, method="skew-t-case-means", cases=cases,
                             attempts=attempts, n_eff=float(cases), reliability=reliability, unit=unit, family=family,
                             bet=iv.bet, cost_bound=bound)
        skewed = positive_unbounded(sample)
        if skewed:
            method = "skew-t-case-means"
        scale = bounded_scale(sample)
        iv = mean_interval(means, family, scale, skewed, ordered(sample, salt), on_scale(bet, scale))
        reliability = "degenerate" if float(np.ptp(means)) == 0.0 else ("low" if cases < FEW_CASES else "ok")
        return with_hull(value, iv.model_low, iv.model_high, method=method, cases=cases, attempts=attempts,
                         n_eff=float(cases), reliability=reliability, unit=unit, family=family, bet=iv.bet)
    if info.shape == "ratio":
        y, x = sample.sums(), sample.pass_counts()
        if cases == 0 or x.sum() <= 0:
            return degenerate("no_data", "M7", cases, attempts, unit)
        if cases < 2:
            return degenerate("too_few_cases", "M7", cases, attempts, unit, value=float(y.sum() / x.sum()))
        bound = usable_bound(cost_bound, family, sample)
        iv = ratio_interval(y, x, family, ordered(sample, salt), bound, sample.counts())
        return with_hull(iv.value, iv.model_low, iv.model_high, method="M7", cases=cases, attempts=attempts,
                         n_eff=float(cases), reliability="low" if cases < FEW_CASES else "ok", unit=unit,
                         family=family, bet=iv.bet, cost_bound=bound)
    # quantile
    if cases == 0:
        return degenerate("no_data", "M5", 0, 0, unit)
    values, q = sample.flat, info.quantile
    assert q is not None, "a quantile metric's info names its quantile"
    point = float(np.quantile(values, q, method="inverted_cdf"))   # the quantile M5 inverts
    if attempts < info.min_attempts:
        return degenerate("too_few_attempts", "M5", cases, attempts, unit, value=point)
    if cases < 2:
        return degenerate("too_few_cases", "M5", cases, attempts, unit, value=point)
    low, high, n_above = intervals.woodruff(values, sample.case_index, cases, q)
    low_reliability = n_above < 5 or (q >= 0.9 and cases < FEW_CASES) or low is None or high is None
    reliability = "degenerate" if float(np.ptp(values)) == 0.0 else ("low" if low_reliability else "ok")
    return with_hull(point, low, high, method="M5", cases=cases, attempts=attempts, n_eff=float(cases),
                     reliability=reliability, unit=unit, family=family, bet=None)
