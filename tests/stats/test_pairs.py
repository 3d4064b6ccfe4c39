"""Compare / noninferior / guardrails: methods, degenerate guards and exact sentences."""

import math

import numpy as np
import pytest

from pytest_aqven.stats import Attempt, CheckValue, Guardrail, Pair, decide, intervals
from pytest_aqven.stats.estimates import stat_seed
from pytest_aqven.stats.pairs import m6, pair_estimate
from pytest_aqven.stats.samples import AttemptTable, build_sample, metric_info

from .helpers import binary_attempts, facts

KINDS = {"promises": "binary", "critique": "continuous"}


def _pair_data(seed=0, cases=40, repeats=10, lift=0.05, cost_ratio=1.5):
    rng = np.random.default_rng(seed)
    out = []
    for c in range(cases):
        pb = rng.uniform(0.6, 1.0)
        pc = min(1.0, pb + lift)
        for r in range(1, repeats + 1):
            for variant, p, cost in (("gpt", pb, 1.0), ("mistral", pc, cost_ratio)):
                ok = bool(rng.random() < p)
                score = float(np.clip(p + rng.normal(0, 0.1), 0, 1))
                out.append(Attempt(
                    variant, f"c{c:03d}", r, "ok", ok,
                    {"promises": CheckValue("passed" if ok else "failed", float(ok)),
                     "critique": CheckValue("passed", score)},
                    cost_usd=0.001 * cost * (1 + c % 3), latency_ms=float(np.exp(6 + c / 40 + rng.normal(0, 0.3))),
                ))
    return out


def two(**kw):
    return facts(("gpt", "mistral"), check_kinds=KINDS, **kw)


def test_noninferior_sentence_with_guardrails():
    q = Pair("noninferior", "gpt", "mistral", "critique", 0.05,
             guardrails=(Guardrail("cost_of_pass", 0.2, "lower_is_better", relative=True), Guardrail("promises", 0.02)))
    v = decide(q, _pair_data(), two())
    assert v.text == (
        "mistral vs gpt on critique: +0.058 (95% CI -0.044 to +0.149): not worse by more than the 0.05 margin; "
        "guardrail cost_of_pass breaks: mistral costs 1.48x gpt (95% CI 1.38x to 1.59x), beyond the relative margin "
        "0.2; guardrail promises is unsettled: +0.01 (95% CI -0.10 to +0.12), too wide to decide at the margin 0.02."
    )
    assert (v.state, v.reason) == ("refuted", None)
    primary, cost, promises = v.cells
    assert primary.estimate.method == "paired-t" and primary.estimate.family == "robust"
    assert cost.estimate.method == "paired-log-ratio" and cost.relative
    assert cost.edge == pytest.approx(-math.log(1.2))
    assert cost.estimate.high < cost.edge  # 50% dearer breaks a 20% relative guardrail
    assert promises.estimate.method == "M2" and promises.edge == -0.02


def test_compare_sentences_units_and_signs():
    data = _pair_data()
    v = decide(Pair("compare", "gpt", "mistral", "cost_usd", 0.0), data, two())
    assert v.text == ("mistral vs gpt on cost_usd, lower is better (+ = mistral lower): -$0.0009875 "
                      "(95% CI -$0.00112 to -$0.0008545): the effect is within ±$0 or reversed "
                          "(no per-attempt cost bound is known).")
    assert v.state == "refuted"
    v = decide(Pair("compare", "gpt", "mistral", "promises", 0.0), data, two())
    assert v.text == "mistral vs gpt on promises: +0.01 (95% CI -0.10 to +0.12): too wide to decide at the 0 margin."
    assert (v.state, v.reason) == ("inconclusive", "below_mde")
    v = decide(Pair("compare", "gpt", "mistral", "latency_p50_ms", 10.0), data, two())
    est = v.cells[0].estimate
    assert est.method == "M6" and est.resamples == 10_000
    table = AttemptTable(data, two().check_kinds)
    info = metric_info("latency_p50_ms", {})
    assert est.seed == stat_seed("", "latency_p50_ms", "gpt", "mistral",
                                 data=(table.sample("gpt", info), table.sample("mistral", info)))
    assert v.text.startswith("mistral vs gpt on latency_p50_ms, lower is better (+ = mistral lower): -3 (95% CI ")
    assert v.text.endswith("): too wide to decide at the 10 margin.")


def test_m6_is_reproducible_and_matches_brute_force():
    data = _pair_data(cases=15, repeats=6)
    info = metric_info("latency_p95_ms", KINDS)
    base = build_sample(data, "gpt", info, KINDS)
    cand = build_sample(data, "mistral", info, KINDS)
    reps = m6(base, cand, 0.95, seed=7, resamples=300, log=True)
    rng = np.random.default_rng(7)
    idx = rng.integers(0, 15, size=(300, 15))
    lat_c = np.stack(cand.values)
    lat_b = np.stack(base.values)
    brute = [np.log(np.quantile(lat_c[row].ravel(), 0.95, method="inverted_cdf")
                    / np.quantile(lat_b[row].ravel(), 0.95, method="inverted_cdf")) for row in idx]
    assert np.allclose(reps, brute)
    assert np.array_equal(reps, m6(base, cand, 0.95, seed=7, resamples=300, log=True))


def test_degenerate_guards_in_order_and_wording():
    one_case = binary_attempts("gpt", [3], 5) + binary_attempts("mistral", [4], 5)
    v = decide(Pair("compare", "gpt", "mistral", "promises", 0.0), one_case, two())
    assert v.cells[0].estimate.degenerate == "too_few_cases"
    assert v.text == "mistral vs gpt on promises: n/a (no 95% CI: too few cases): no interval, so no decision."
    v = decide(Pair("compare", "gpt", "mistral", "latency_p95_ms", 0.0), _pair_data(cases=3, repeats=3), two())
    assert v.cells[0].estimate.degenerate == "too_few_attempts"
    v = decide(Pair("compare", "gpt", "mistral", "cost_of_pass", 0.0),
               binary_attempts("gpt", [0] * 5, 4) + binary_attempts("mistral", [1] * 5, 4, cost_usd=0.1), two())
    assert (v.state, v.reason) == ("invalid", "no_data")


def test_agreement_on_every_case_decides_by_the_exact_bound():
    """0 discordant cases of C: |difference| <= 1 - 0.025^(1/C), never a zero-width interval or none. 129
    agreeing held-out cases confirm noninferiority at 0.1 (bound 0.028); 10 are too few for it."""
    same = binary_attempts("gpt", [3, 4, 5] * 43, 5) + binary_attempts("mistral", [3, 4, 5] * 43, 5)
    v = decide(Pair("noninferior", "gpt", "mistral", "promises", 0.1), same, two())
    bound = 1 - 0.025 ** (1 / 129)
    cell = v.cells[0]
    assert (v.state, cell.estimate.method, cell.decided_by) == ("confirmed", "exact-agreement", "exact")
    assert (cell.estimate.low, cell.estimate.high) == pytest.approx((-bound, bound))
    assert v.text == ("mistral vs gpt on promises: +0.00 (95% CI -0.03 to +0.03): "
                      "not worse by more than the 0.1 margin.")
    v = decide(Pair("compare", "gpt", "mistral", "promises", 0.0), same, two())
    assert (v.state, v.reason) == ("inconclusive", "below_mde")      # an A/A never confirms a difference
    both_pass = binary_attempts("gpt", [5] * 10, 5) + binary_attempts("mistral", [5] * 10, 5)
    v = decide(Pair("noninferior", "gpt", "mistral", "promises", 0.1), both_pass, two())
    assert (v.state, v.reason) == ("inconclusive", "below_mde")
    assert v.cells[0].estimate.low == pytest.approx(-(1 - 0.025 ** 0.1))
    for family in ("robust", "model"):
        v = decide(Pair("noninferior", "gpt", "mistral", "promises", 0.1), same, two(family=family))
        assert v.state == "confirmed", family


def test_agreement_without_a_scale_or_on_a_relative_margin_gives_no_interval():
    costs = [Attempt(v, f"c{i}", 1, "ok", True, cost_usd=0.01 * (i + 1)) for v in ("gpt", "mistral") for i in range(40)]
    v = decide(Pair("noninferior", "gpt", "mistral", "cost_usd", 0.01), costs, two())
    assert (v.state, v.reason) == ("inconclusive", "no_discordance")
    assert "(no 95% CI: the variants agree on every case)" in v.text
    same = binary_attempts("gpt", [3, 4, 5] * 43, 5) + binary_attempts("mistral", [3, 4, 5] * 43, 5)
    v = decide(Pair("noninferior", "gpt", "mistral", "promises", 0.1,
                    guardrails=(Guardrail("promises", 0.1, relative=True),)), same, two())
    assert (v.cells[1].estimate.method, v.cells[1].estimate.degenerate) == ("M2-contrast", "no_discordance")


def test_guardrail_refutes_and_every_guardrail_must_hold():
    data = _pair_data(cases=60, lift=0.0, cost_ratio=3.0)
    q = Pair("noninferior", "gpt", "mistral", "critique", 0.2,
             guardrails=(Guardrail("cost_usd", 0.0005),))
    v = decide(q, data, two())
    assert v.cells[0].verdict == "pass" and v.cells[1].verdict == "fail"
    assert v.state == "refuted" and v.text.endswith(
        "; guardrail cost_usd breaks, lower is better (+ = mistral lower): -$0.004 (95% CI -$0.004425 to -$0.003575), "
        "beyond the margin $0.0005 (no per-attempt cost bound is known).")
    v = decide(Pair("noninferior", "gpt", "mistral", "critique", 0.2), data, two())
    assert v.state == "confirmed"


def test_relative_rate_guardrail_is_a_linear_contrast():
    data = _pair_data(cases=60, lift=0.0)
    kinds = KINDS
    info = metric_info("promises", kinds)
    base, cand = build_sample(data, "gpt", info, kinds), build_sample(data, "mistral", info, kinds)
    est = pair_estimate(base, cand, "higher_is_better", "s", "model", relative_margin=0.1)
    kb, nb, kc, nc = base.sums(), base.counts(), cand.sums(), cand.counts()
    value, low, high, _ = intervals.m2(kc, nc, kb, nb, 1.0, 0.9)
    assert est.value == pytest.approx(float(kc.sum() / nc.sum() - 0.9 * kb.sum() / nb.sum()), abs=1e-12)
    assert (est.low, est.high) == pytest.approx((float(low), float(high)))
    robust = pair_estimate(base, cand, "higher_is_better", "s", "robust", relative_margin=0.1)
    assert robust.low <= est.low and robust.high >= est.high and robust.family == "robust"


def test_m2_reduces_to_m1_when_the_baseline_is_constant_zero_width():
    k = np.array([3.0, 5, 4, 2, 5, 5, 1, 4])
    n = np.full(8, 5.0)
    p, low, high, _, _ = intervals.m1(k, n)
    diff, dlow, dhigh, _ = intervals.m2(k, n, np.zeros(8), n, 1.0, 0.0)
    assert (float(diff), float(dlow), float(dhigh)) == pytest.approx((float(p), float(low), float(high)))


def test_a_verdict_is_reproducible_from_the_same_attempts():
    q = Pair("compare", "gpt", "mistral", "latency_p95_ms", 0.0,
             guardrails=(Guardrail("latency_p50_ms", 0.1, relative=True),))
    data = _pair_data(cases=25, repeats=4)
    assert decide(q, data, two()) == decide(q, list(reversed(data)), two())


def test_lower_is_better_rate_guardrail_and_relative_contrast_direction():
    data = _pair_data(cases=40)
    errors = [Attempt("mistral", f"c{i:03d}", 99, "infra_error", None, {}) for i in range(2)]
    q = Pair("noninferior", "gpt", "mistral", "critique", 0.2,
             guardrails=(Guardrail("infra_error_rate", 0.5), Guardrail("cost_usd", 0.1, relative=True)))
    v = decide(q, data + errors, two())
    infra, cost = v.cells[1], v.cells[2]
    assert infra.direction == "lower_is_better" and infra.estimate.value < 0  # the candidate has more errors
    assert infra.verdict == "pass"  # far inside a 0.5 margin
    # cost: candidate is 1.5x the baseline; (1 + 0.1) * base - cand < 0 on every case
    assert cost.estimate.method == "paired-t-contrast" and cost.edge == 0.0
    assert cost.estimate.high < 0 and cost.verdict == "fail"
    assert v.state == "refuted"
