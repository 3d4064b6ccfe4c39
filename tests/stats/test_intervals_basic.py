"""Deterministic values of M1 and the betting interval (statistics.md V0, robust-intervals.md vectors)."""

import numpy as np
import pytest

from pytest_aqven.stats import betting, intervals

VECTOR = np.array([10, 10, 9, 10, 8, 10, 10, 7, 10, 9, 10, 10, 10, 6, 10, 9, 10, 10, 8, 10], dtype=float)


def test_m1_all_pass_12x20_is_the_case_level_worst_case():
    p, low, high, n_eff, flag = intervals.m1(np.full(12, 20.0), np.full(12, 20.0))
    assert float(low) == pytest.approx(0.7353515, abs=1e-7)
    assert float(low) == pytest.approx(0.025 ** (1 / 12), abs=1e-12)
    assert float(high) == 1.0 and float(n_eff) == 12 and bool(flag)


def test_m1_all_fail_mirrors_all_pass():
    p, low, high, _, _ = intervals.m1(np.zeros(12), np.full(12, 20.0))
    assert float(low) == 0.0
    assert float(high) == pytest.approx(1 - 0.025 ** (1 / 12), abs=1e-12)


def test_iid_clopper_pearson_240_is_what_m1_must_not_return():
    from scipy import stats

    iid = stats.binomtest(240, 240).proportion_ci(0.95, method="exact").low
    assert iid == pytest.approx(0.98475, abs=1e-5)
    _, low, _, _, _ = intervals.m1(np.full(12, 20.0), np.full(12, 20.0))
    assert float(low) < iid - 0.2


def test_m1_reference_vector():
    _, low, high, _, _ = intervals.m1(VECTOR, np.full(20, 10.0))
    assert (float(low), float(high)) == pytest.approx((0.834977, 0.979422), abs=1e-6)


def test_m1_vectorised_matches_rowwise():
    rng = np.random.default_rng(3)
    k = rng.binomial(10, rng.uniform(0.6, 1.0, size=(7, 15))).astype(float)
    n = np.full_like(k, 10.0)
    _, low, high, _, _ = intervals.m1(k, n)
    for row in range(7):
        _, lo1, hi1, _, _ = intervals.m1(k[row], n[row])
        assert float(lo1) == pytest.approx(low[row]) and float(hi1) == pytest.approx(high[row])


def test_betting_reference_vector_with_and_without_floor():
    low, high = betting.interval(VECTOR / 10)
    assert (float(low), float(high)) == pytest.approx((0.759823, 0.977953), abs=1e-6)
    low, high = betting.interval(VECTOR / 10, floor=False)
    assert (float(low), float(high)) == pytest.approx((0.759823, 1.0), abs=1e-6)


@pytest.mark.parametrize("n,expected", [(12, 0.7253), (20, 0.8243), (30, 0.8786), (60, 0.9370), (100, 0.9616)])
def test_betting_all_pass(n, expected):
    low, high = betting.interval(np.ones(n))
    assert float(low) == pytest.approx(expected, abs=1e-4)
    assert float(low) < 0.025 ** (1 / n)
    assert float(high) == 1.0


def test_case_order_is_keyed_and_ignores_outcomes():
    names = [f"case{i}" for i in range(20)]
    order = betting.case_order("series-A", names)
    assert sorted(order) == list(range(20))
    assert order == betting.case_order("series-A", names)
    assert order != betting.case_order("series-B", names)


def test_interval_on_rescales_paired_differences():
    d = np.array([0.1, 0.0, -0.1, 0.2, 0.0, 0.1] * 5)
    low, high = betting.interval_on(d, -1.0, 1.0)
    y_low, y_high = betting.interval((d + 1) / 2)
    assert float(low) == pytest.approx(2 * y_low - 1) and float(high) == pytest.approx(2 * y_high - 1)


def _bisection_lower_bound(x, alpha=0.05):
    """The betting lower bound by plain bisection (one bit a step), for comparison."""
    a = alpha / 2
    n = x.shape[-1]
    lam = betting._bets(x, a)
    g = 1.0 / np.sqrt(n)
    lo, hi = np.zeros(x.shape[:-1]), np.ones(x.shape[:-1])
    for _ in range(betting.STEPS):
        m = (lo + hi) / 2
        f = np.minimum(betting.TRUNCATION, np.maximum(g, lam * m[..., None]))
        rejected = np.cumsum(np.log1p(f * (x / m[..., None] - 1.0)), axis=-1).max(axis=-1) >= np.log(1 / a)
        lo, hi = np.where(rejected, m, lo), np.where(rejected, hi, m)
    return lo


def test_betting_bound_is_the_bisection_bound_whatever_the_bits_per_round():
    rng = np.random.default_rng(11)
    for shape in ((40,), (3, 100), (12, 100), (60, 100)):  # 3, 3, 2 and 1 bits a round
        x = rng.binomial(10, rng.beta(6, 1.5, shape)) / 10
        assert np.array_equal(betting.lower_bound(x), _bisection_lower_bound(x)), shape
