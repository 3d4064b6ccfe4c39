"""Numbers in words: a difference or guardrail cell says which variant is better and by how much in the
metric's own unit, never a signed number on an internal scale; a comparison with too few cases says so."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_aqven.report.data import NEXT, cell_entry
from pytest_aqven.report.text import cell_text, pair_words
from pytest_aqven.stats import Attempt, CheckValue, Guardrail, Pair, decide

from ..stats.helpers import facts


def cell(value, low, high, unit, *, metric="latency_p50_ms", direction="lower_is_better", relative=False,
         margin=100.0, variant="nano", baseline="mid") -> dict:
    return {"metric": metric, "role": "guardrail", "variant": variant, "baseline": baseline, "direction": direction,
            "bound": None, "threshold": None, "margin": margin, "relative": relative, "verdict": "pass",
            "estimate": {"value": value, "low": low, "high": high, "unit": unit}}


def test_a_ratio_short_of_1_never_reads_1_00x():
    near = cell(-math.log(0.999), -math.log(0.9995), -math.log(0.998), "log_ratio", metric="cost_of_pass",
                relative=True, margin=0.5)
    assert pair_words(near) == "nano costs 0.999x mid per pass (better); 95% CI 0.998x to 0.9995x"


def test_a_latency_difference_says_who_is_faster_and_by_how_many_ms():
    # issue 20: `guardrail nano vs mid latency_p50_ms: +547 [+508, +566]` when nano is 547 ms faster
    assert pair_words(cell(547.0, 508.0, 566.0, "ms")) == "nano 547 ms faster than mid (better); 95% CI 508 to 566 ms faster"
    assert pair_words(cell(-20.0, -40.0, 10.0, "ms")) == ("nano 20 ms slower than mid (worse); 95% CI 10 ms faster to "
                                                           "40 ms slower")
    assert pair_words(cell(547.0, 508.0, 566.0, "ms"), short=True) == "547 ms faster [508 to 566 ms faster]"


def test_a_relative_guardrail_reads_as_a_ratio_of_the_metric_not_its_log():
    # issue 20: relative guardrails printed a log ratio (`+1.461`) unexplained; nano costs 0.23x mid per pass
    v, lo, hi = -math.log(0.23), -math.log(0.27), -math.log(0.20)
    text = pair_words(cell(v, lo, hi, "log_ratio", metric="cost_of_pass", relative=True, margin=0.5))
    assert text == "nano costs 0.23x mid per pass (better); 95% CI 0.20x to 0.27x"
    assert cell_text(cell(v, lo, hi, "log_ratio", metric="cost_of_pass", relative=True, margin=0.5)) == (
        "nano costs 0.23x mid per pass (better); 95% CI 0.20x to 0.27x; against the relative margin 0.5: pass")
    slower = pair_words(cell(math.log(0.8), math.log(0.7), math.log(0.9), "log_ratio", relative=True, margin=0.1))
    assert slower == "nano takes 1.25x the median latency of mid (worse); 95% CI 1.11x to 1.43x"


def test_rates_costs_and_relative_contrasts_in_their_units():
    rate = cell(-0.04, -0.27, 0.18, "rate", metric="intent", direction="higher_is_better", margin=0.1,
                variant="small", baseline="large")
    assert pair_words(rate) == "small 0.04 lower than large (worse); 95% CI 0.27 lower to 0.18 higher"
    cost = cell(0.0012, 0.001, 0.0014, "usd", metric="cost_usd")
    assert pair_words(cost) == "nano $0.0012 cheaper than mid (better); 95% CI $0.001 to $0.0014 cheaper"
    contrast = cell(0.05, -0.02, 0.1, "rate", metric="success_rate", direction="higher_is_better", relative=True,
                    margin=0.1, variant="small", baseline="large")
    assert pair_words(contrast) == "small 0.05 better than 0.9 × large; 95% CI 0.02 worse to 0.10 better"


def test_a_one_case_comparison_says_too_few_cases_not_below_mde():
    attempts = [Attempt(v, "only", r, "ok", ok, {"promises": CheckValue("passed" if ok else "failed", float(ok))},
                        latency_ms=100.0)
                for v, ok in (("gpt", True), ("mistral", False)) for r in (1, 2)]
    verdict = decide(Pair("noninferior", "gpt", "mistral", "promises", 0.1), attempts,
                     facts(("gpt", "mistral"), check_kinds={"promises": "binary"}))
    assert (verdict.state, verdict.reason) == ("inconclusive", "too_few_cases")
    assert "(no 95% CI: too few cases)" in verdict.text
    assert NEXT[("inconclusive", "too_few_cases")].startswith("run more cases")
    assert pair_words(cell_entry(verdict.cells[0])) == "mistral vs gpt: no 95% CI: too few cases"


def test_a_decided_guardrail_cell_reads_in_words():
    rng = np.random.default_rng(3)
    attempts = []
    for c in range(30):
        for r in (1, 2):
            for variant, ms in (("mid", 900.0), ("nano", 350.0)):
                attempts.append(Attempt(variant, f"c{c:02d}", r, "ok", True,
                                        {"promises": CheckValue("passed", 1.0)},
                                        cost_usd=0.001, latency_ms=float(ms + rng.normal(0, 20))))
    q = Pair("noninferior", "mid", "nano", "promises", 0.1, guardrails=(Guardrail("latency_p50_ms", 100.0),))
    verdict = decide(q, attempts, facts(("mid", "nano"), check_kinds={"promises": "binary"}))
    guard = cell_entry(next(c for c in verdict.cells if c.role == "guardrail"))
    words = pair_words(guard)
    assert words.startswith("nano ") and " ms faster than mid (better); 95% CI " in words
    assert 500 <= float(words.split()[1]) <= 600
    assert pytest.approx(guard["estimate"]["value"], abs=1) == float(words.split()[1])
