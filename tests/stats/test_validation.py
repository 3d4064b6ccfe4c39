"""statistics.md §12 validation tests V0-V9 (V10 timings live in bench/bench_stats.py).

Every grid is seeded and deterministic. Sizes: 2000 series per cell for the closed-form methods
(MC error of a 2.5% tail: 0.0035, so a 0.035 band is ~3 SE), 1000 per cell for M5, 400 series x
1000 resamples per cell for M6. Each test reports the failing cells, not just the first.
"""

import numpy as np
import pytest

from pytest_aqven.stats import Attempt, CheckValue, Pair, SeriesFacts, decide
from pytest_aqven.stats.betting import case_order
from pytest_aqven.stats.estimates import rate_interval
from pytest_aqven.stats.pairs import pair_rate_interval

from . import validation as V

TAIL = 0.035


def _fmt(rows, *keys):
    return "\n".join(f"{r['cell']}: " + ", ".join(f"{k}={r[k]:.4f}" for k in keys) for r in rows)


# ---- V0: deterministic unit values live in test_intervals_basic.py (M1 all-pass / all-fail, iid CP,
# betting vectors), test_single.py (Woodruff by hand) and test_threshold_verdicts.py (truth table).


def test_v0_verdict_truth_table_for_every_ordering():
    from pytest_aqven.stats.verdicts import interval_verdict

    edge = 0.5
    cases = {  # (L, U) relative to T: every ordering, ties included
        (0.6, 0.7): "pass", (0.5, 0.7): "unclear", (0.4, 0.7): "unclear", (0.4, 0.5): "unclear",
        (0.3, 0.4): "fail", (0.5, 0.5): "unclear",
    }
    for (low, high), expected in cases.items():
        assert interval_verdict(low, high, edge) == expected, (low, high)


def test_pipeline_functions_are_what_decide_uses():
    """The vectorised functions the grids and the planner run give decide's own intervals."""
    rng = np.random.default_rng(0)
    kb = rng.binomial(10, rng.uniform(0.5, 1, 25)).astype(float)
    kc = rng.binomial(10, rng.uniform(0.5, 1, 25)).astype(float)
    attempts = []
    for variant, ks in (("a", kb), ("b", kc)):
        for i, k in enumerate(ks):
            for r in range(10):
                ok = r < k
                attempts.append(Attempt(variant, f"case{i}", r + 1, "ok", ok,
                                        {"x": CheckValue("passed" if ok else "failed", float(ok))}))
    facts = SeriesFacts("sid", "holdout", ("a", "b"), {"x": "binary"}, salt="sid")
    verdict = decide(Pair("compare", "a", "b", "x", 0.0), attempts, facts)
    order = case_order("sid", [f"case{i}" for i in range(25)])
    n = np.full(25, 10.0)
    iv = pair_rate_interval(kc, n, kb, n, 1.0, 1.0, "robust", np.array(order))
    est = verdict.cells[0].estimate
    assert (est.low, est.high) == (float(iv.low), float(iv.high))
    iv = rate_interval(kb, n, "robust", np.array(order))
    low, high = iv.low, iv.high
    single = verdict.metrics["a"]["x"]
    assert (single.low, single.high) == pytest.approx((float(low), float(high)), abs=1e-12)


def test_v1_m1_regular_regime():
    rows = V.v1_rows()
    bad = [r for r in rows if not (0.93 <= r["coverage"] <= 0.985 and r["over"] <= TAIL and r["under"] <= TAIL)]
    assert not bad, _fmt(bad, "coverage", "over", "under")


def test_v2_m1_boundary_and_small_c():
    rows = V.v2_rows()
    bad = [r for r in rows if r["over"] > TAIL or r["coverage"] < 0.93]
    assert not bad, _fmt(bad, "coverage", "over")
    widths = {r["cell"]: r["width"] for r in rows}
    assert all(widths[f"C=12 R=20 rho={rho}"] <= 0.32 for rho in (0.02, 0.1, 0.3, 0.6))
    assert widths["C=100 R=20 rho=0.1"] <= 0.035


@pytest.mark.slow
def test_v2_robust_family_holds_both_tails_on_hard_case_mixtures():
    """A few % of hard cases hide from small samples: M1 confirms far too often, the hull does not."""
    rows = V.robust_mixture_rows()
    bad = [r for r in rows if r["over"] > TAIL or r["under"] > TAIL]
    assert not bad, _fmt(bad, "over", "under")
    assert max(r["m1_over"] for r in rows) > 0.1  # why the default is the hull


def test_v3_iid_pooled_wilson_must_fail():
    assert V.pooled_wilson_coverage()["coverage"] < 0.7


@pytest.mark.slow
def test_v4_m2_paired_binary():
    rows = V.v4_rows()
    bad = [r for r in rows if r["coverage"] < 0.93 or r["over"] > TAIL or r["under"] > TAIL
           or (r["cases"] >= 30 and max(r["rates"]) <= 0.9 and r["coverage"] > 0.985)]
    assert not bad, _fmt(bad, "coverage", "over", "under")


def test_v4_robust_family_holds_when_harm_is_concentrated():
    rows = V.concentrated_harm_rows()
    bad = [r for r in rows if r["over"] > TAIL or r["under"] > TAIL]
    assert not bad, _fmt(bad, "over", "under")
    assert max(r["m2_over"] for r in rows) > 0.1  # M2 alone declares false noninferiority here


def test_v5_false_verdict_rates():
    rows = V.v5_rows()
    bad = [r for r in rows if max(r.get("better", 0), r.get("worse", 0), r.get("confirmed", 0)) > TAIL]
    assert not bad, "\n".join(str(r) for r in bad)


def test_v6_continuous_means():
    """Skewness-corrected t (single arm, positive unbounded) and paired t meet V6's bands."""
    rows = {r["cell"]: r for r in V.v6_rows()}
    bad = []
    for cases in (12, 30, 100):
        for sigma_c in (0.5, 1.0):
            for method in ("skew-t", "paired t"):
                r = rows[f"{method} C={cases} sigma_c={sigma_c}"]
                ok = 0.93 <= r["coverage"] <= 0.97 if cases >= 30 else r["coverage"] >= 0.90
                if not ok:
                    bad.append(r)
    assert not bad, _fmt(bad, "coverage", "over", "under")
    # why the correction exists: the plain t misses the band on heavy skew
    assert rows["t C=30 sigma_c=1.0"]["coverage"] < 0.90


def test_v6_skew_correction_holds_its_tails_on_other_shapes():
    """On symmetric, mildly and strongly skewed positive shapes the corrected t keeps each tail."""
    rows = V.v6_shape_rows()
    bad = [r for r in rows if r["over"] > TAIL or r["under"] > TAIL]
    assert not bad, _fmt(bad, "coverage", "over", "under")
    assert max(r["t_under"] for r in rows) > 0.1  # the plain t's upper bound misses on the same shapes


def test_v7_ratios():
    rows = V.v7_rows()
    bad = [r for r in rows if (r["cases"] >= 30 and not 0.93 <= r["coverage"] <= 0.97)
           or (r["cases"] < 30 and r["coverage"] < 0.92)]
    assert not bad, _fmt(bad, "coverage", "over", "under")


def test_v8_m5_quantiles():
    rows = V.v8_m5_rows()
    for r in rows:
        if r["q"] == 0.5:
            assert 0.93 <= r["coverage"] <= 0.975, r
        elif r["cases"] >= 30 and r["sigma_c"] <= 0.5:
            assert r["coverage"] >= 0.93, r
        elif r["cases"] < 30:
            assert r["flagged_misses"] >= 0.9, r


@pytest.mark.slow
def test_v8_m6_quantile_ratio():
    rows = V.v8_m6_rows()
    bad = [r for r in rows if r["coverage"] < 0.93]
    assert not bad, _fmt(bad, "coverage", "over", "under")


def test_betting_interval_alone_holds_its_tails():
    rows = V.betting_alone_rows()
    bad = [r for r in rows if r["over"] > TAIL or r["under"] > TAIL]
    assert not bad, _fmt(bad, "over", "under")


@pytest.mark.slow
def test_v9_planner_reaches_power_and_is_near_minimal():
    rows = V.v9_rows()
    bad = [r for r in rows if r["power"] < 0.78 or r["power_smaller"] >= 0.8]
    assert not bad, "\n".join(str(r) for r in bad)


def test_the_planners_edge_test_is_the_hull_decision():
    """`clears` (used by the planner) decides exactly as `low > edge` / `high < edge` on the hull."""
    from pytest_aqven.stats.estimates import clears, mean_interval

    rng = np.random.default_rng(5)
    k = rng.binomial(10, rng.beta(8, 2, (3000, 30))).astype(float)
    n = np.full_like(k, 10.0)
    for edge in (0.6, 0.7, 0.75, 0.8, 0.85):
        for family in ("robust", "model"):
            iv = rate_interval(k, n, family)
            low, high, m_low, m_high = iv.low, iv.high, iv.model_low, iv.model_high
            assert np.array_equal(clears(m_low, m_high, k / n, (0, 1), family, True, edge, True), low > edge)
            assert np.array_equal(clears(m_low, m_high, k / n, (0, 1), family, True, edge, False), high < edge)
            x = k / n
            iv = mean_interval(x, family, True)
            low, high, t_low, t_high = iv.low, iv.high, iv.model_low, iv.model_high
            assert np.array_equal(clears(t_low, t_high, x, (0, 1), family, True, edge, True), low > edge)
    kc = rng.binomial(10, rng.beta(8, 2, (3000, 30))).astype(float)
    iv = pair_rate_interval(kc, n, k, n, 1.0, 1.0, "robust")
    low, m_low, m_high = iv.low, iv.model_low, iv.model_high
    for edge in (-0.1, -0.05, 0.0, 0.05):
        assert np.array_equal(clears(m_low, m_high, (kc - k) / n, (-1, 1), "robust", True, edge, True), low > edge)
