"""Single-variant estimates of every metric shape (V0 hand values included)."""

import numpy as np
import pytest
from scipy import stats

from pytest_aqven.stats import Attempt, CheckValue, intervals
from pytest_aqven.stats.estimates import single
from pytest_aqven.stats.samples import build_sample, metric_info

KINDS = {"critique": "continuous", "stars": "ordinal"}


def _sample(metric, attempts):
    return build_sample(attempts, "v", metric_info(metric, KINDS), KINDS)


def test_woodruff_hand_made_3x3():
    # cases [1,4,7], [2,5,8], [3,6,9]; pooled median (inverted CDF) = 5
    # z = share of each case <= 5 = (2/3, 2/3, 1/3); sd = sqrt(3)/9; se = sd/sqrt(3) = 1/9
    # half = t(0.975, 2) / 9 = 0.478; [0.5 - half, 0.5 + half] = [0.0219, 0.9781]
    # -> inverted CDF of 9 values: ceil(0.0219 * 9) = 1st = 1, ceil(0.9781 * 9) = 9th = 9
    values = np.array([1, 4, 7, 2, 5, 8, 3, 6, 9], dtype=float)
    case_index = np.repeat(np.arange(3), 3)
    low, high, n_above = intervals.woodruff(values, case_index, 3, 0.5)
    half = stats.t.ppf(0.975, 2) / 9
    assert half == pytest.approx(0.47808, abs=1e-5)
    assert (low, high, n_above) == (1.0, 9.0, 3)


def test_woodruff_interior_bounds_by_hand():
    # 40 cases x 5 attempts, case i holds values 10i+1..10i+5: pooled median (inverted CDF) is the
    # 100th value = 195, so z_i = 1 for the first 20 cases and 0 for the rest
    values = np.array([10 * i + j for i in range(40) for j in range(1, 6)], dtype=float)
    case_index = np.repeat(np.arange(40), 5)
    z = np.array([1.0] * 20 + [0.0] * 20)
    half = stats.t.ppf(0.975, 39) * z.std(ddof=1) / np.sqrt(40)
    order = np.sort(values)
    expect_low = order[int(np.ceil((0.5 - half) * 200)) - 1]
    expect_high = order[int(np.ceil((0.5 + half) * 200)) - 1]
    low, high, _ = intervals.woodruff(values, case_index, 40, 0.5)
    assert (low, high) == (expect_low, expect_high)
    assert low < 195 < high


def _attempts(rows):
    return [Attempt("v", f"c{i}", r + 1, "ok", True, {}, **fields) for i, row in enumerate(rows)
            for r, fields in enumerate(row)]


def test_latency_quantiles_and_reliability():
    rng = np.random.default_rng(1)
    rows = [[{"latency_ms": float(x)} for x in np.exp(6 + a + rng.normal(0, 0.3, 10))] for a in rng.normal(0, 0.5, 40)]
    est = single(_sample("latency_p50_ms", _attempts(rows)), "s")
    assert est.method == "M5" and est.family == "model" and est.low < est.value < est.high
    pooled = np.concatenate([[f["latency_ms"] for f in row] for row in rows])
    assert est.value == pytest.approx(np.quantile(pooled, 0.5, method="inverted_cdf"))   # what M5 inverts


def test_a_quantile_interval_always_holds_its_own_estimate():
    """Ten cases, each half at 101 ms and half at 102 ms: the linear median 101.5 fell outside [101, 101]
    before; the estimate is the pooled inverted-CDF quantile, the one Woodruff's interval is built around."""
    rows = [[{"latency_ms": 101.0 if (i + r) % 2 else 102.0} for r in range(10)] for i in range(10)]
    est = single(_sample("latency_p50_ms", _attempts(rows)), "s")
    assert est.low <= est.value <= est.high
    p95 = single(_sample("latency_p95_ms", _attempts(rows[:12])), "s")
    assert p95.reliability == "low"  # a p95 of 12 cases rests on the slowest few
    few = single(_sample("latency_p95_ms", _attempts([r[:1] for r in rows[:19]])), "s")
    assert few.degenerate == "too_few_attempts" and few.low is None


def test_cost_of_pass_is_a_ratio_of_sums_with_m7():
    attempts = [Attempt("v", f"c{i}", r, "ok", (i + r) % 3 != 0, {}, cost_usd=0.01 * (1 + i % 4))
                for i in range(30) for r in range(1, 6)]
    est = single(_sample("cost_of_pass", attempts), "s")
    costs = sum(a.cost_usd for a in attempts)
    passes = sum(a.passed for a in attempts)
    assert est.value == pytest.approx(costs / passes)
    assert est.method == "M7" and est.low < est.value < est.high
    assert est.high / est.value == pytest.approx(est.value / est.low)  # symmetric on the log scale
    none = single(_sample("cost_of_pass", [Attempt("v", "c", 1, "ok", False, {}, cost_usd=0.1)] * 3), "s")
    assert none.degenerate == "no_data"


def test_scores_t_on_case_means_and_hull_only_when_bounded():
    rng = np.random.default_rng(2)
    attempts = [Attempt("v", f"c{i}", r, "ok", True,
                        {"critique": CheckValue("passed", float(np.clip(0.7 + 0.1 * rng.normal(), 0, 1))),
                         "stars": CheckValue("passed", float(rng.integers(1, 6)))})
                for i in range(20) for r in range(1, 4)]
    crit = single(_sample("critique", attempts), "s")
    means = _sample("critique", attempts).case_means()
    _, low, high, _ = intervals.t_mean(means)
    assert crit.model_low == pytest.approx(float(low)) and crit.family == "robust"
    assert crit.low <= crit.model_low and crit.high >= crit.model_high
    stars = single(_sample("stars", attempts), "s")
    assert stars.family == "model" and stars.unit == "ordinal"


def test_zero_variance_score_never_confirms():
    from pytest_aqven.stats import SeriesFacts, Threshold, decide

    attempts = [Attempt("v", f"c{i}", 1, "ok", True, {"stars": CheckValue("passed", 4.0)}) for i in range(30)]
    facts = SeriesFacts("s", "holdout", ("v",), KINDS, family="model")
    v = decide(Threshold("stars", above=3.0), attempts, facts)
    cell = v.cells[0]
    assert cell.estimate.reliability == "degenerate" and cell.estimate.low == cell.estimate.high == 4.0
    assert cell.verdict == "unclear" and v.state == "inconclusive"


def test_skew_corrected_t_hand_values():
    # x = [1, 1, 1, 5]: mean 2, s = 2, se = 1, adjusted skewness G1 = 2 (g1 = 6 / 3^1.5, times sqrt(12) / 2);
    # a = G1 / (3 sqrt 4) = 1/3, b = G1 / (6 sqrt 4) = 1/6, q = t(0.975, 3);
    # low = 2 - 3 (cbrt(1 + (q - 1/6)) - 1), high = 2 - 3 (cbrt(1 - (q + 1/6)) - 1); CV = 1 -> floor 2 = G1
    x = np.array([1.0, 1.0, 1.0, 5.0])
    assert intervals.skewness(x) == pytest.approx(2.0)
    q = stats.t.ppf(0.975, 3)
    low = 2 - 3 * (np.cbrt(1 + (q - 1 / 6)) - 1)
    high = 2 - 3 * (np.cbrt(1 - (q + 1 / 6)) - 1)
    assert (low, high) == pytest.approx((0.23153, 8.98803), abs=1e-4)
    for skewed in (False, True):
        mean, lo, hi = intervals.skew_t_mean(x, right_skewed=skewed)
        assert (mean, lo, hi) == pytest.approx((2.0, low, high))
    # no skew in the sample and no floor: exactly the t interval
    sym = np.array([1.0, 2.0, 3.0, 4.0])
    assert intervals.skew_t_mean(sym)[1:] == pytest.approx(intervals.t_mean(sym)[1:3], abs=1e-12)
    # a floor above the sample skewness widens only the upper bound
    flat = np.array([0.2, 0.9, 1.0, 1.1, 1.8])
    _, lo0, hi0 = intervals.skew_t_mean(flat)
    _, lo1, hi1 = intervals.skew_t_mean(flat, right_skewed=True)
    assert lo1 == lo0 and hi1 > hi0


def test_which_means_get_the_skew_correction():
    rng = np.random.default_rng(3)
    attempts = [Attempt("v", f"c{i}", r, "ok", True,
                        {"critique": CheckValue("passed", float(np.clip(0.7 + 0.1 * rng.normal(), 0, 1))),
                         "stars": CheckValue("passed", float(rng.integers(1, 6)))},
                        cost_usd=float(np.exp(rng.normal(-5, 1))))
                for i in range(40) for r in range(1, 4)]
    cost = single(_sample("cost_usd", attempts), "s")
    means = _sample("cost_usd", attempts).case_means()
    _, low, high = intervals.skew_t_mean(means, right_skewed=True)
    assert cost.method == "skew-t-case-means" and (cost.low, cost.high) == pytest.approx((float(low), float(high)))
    assert cost.high - cost.value > cost.value - cost.low  # longer on the skewed side
    assert single(_sample("critique", attempts), "s").method == "t-case-means"  # bounded in [0, 1]
    assert single(_sample("stars", attempts), "s").method == "t-case-means"  # ordinal: bounded scale
    open_scale = [Attempt("v", f"c{i}", 1, "ok", True, {"critique": CheckValue("passed", float(np.exp(rng.normal(1, 1))))})
                  for i in range(40)]
    assert single(_sample("critique", open_scale), "s").method == "skew-t-case-means"
