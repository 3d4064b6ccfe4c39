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
    assert est.value == pytest.approx(np.quantile(pooled, 0.5))
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
