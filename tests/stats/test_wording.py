"""Sentences never contradict themselves: digits enough to show a bound's side of the edge, no "too wide"
for an interval of no width, a direction for lower-is-better differences, one money style."""

import math

import pytest

from pytest_aqven.stats import Attempt, Pair, SeriesFacts, Threshold, decide
from pytest_aqven.stats.model import Cell, Estimate
from pytest_aqven.stats.verdicts import threshold_cell
from pytest_aqven.stats.wording import bound, declared, guardrail_phrase, interval_text, number, threshold_phrase, usd

from .helpers import binary_attempts, facts


def _estimate(low, high, value=0.8, unit="rate"):
    return Estimate(value=value, low=low, high=high, method="M1", cases=30, attempts=90, unit=unit)


@pytest.mark.parametrize("value, edge, shown", [
    (0.618, 0.62, "0.618"),      # below the edge: 0.62 would read as on it
    (0.6204, 0.62, "0.6204"),    # above by a hair: 0.62 would read as on it
    (0.6249, 0.62, "0.625"),     # rounds onto the edge from above
    (0.6151, 0.62, "0.615"),     # and from below
    (0.62, 0.62, "0.62"),        # on the edge: as is (a tie is never decided)
    (0.96, 0.62, "0.96"),        # far from it: the unit's 2 decimals
])
def test_a_bound_next_to_the_edge_shows_its_side(value, edge, shown):
    text = bound(value, "rate", edge=edge)
    assert text == shown
    if value != edge:
        assert (float(text) - edge) * (value - edge) > 0


def test_the_eleven_runs_sentence_no_longer_reads_0_62_to_0_96_on_both_sides():
    q = Threshold("m", above=0.6, margin=0.02)
    below = threshold_cell(q, "small", _estimate(0.618, 0.96), "higher_is_better", "robust")
    above = threshold_cell(q, "small", _estimate(0.6204, 0.96), "higher_is_better", "robust")
    assert below.verdict == "unclear" and above.verdict == "pass"
    assert threshold_phrase(below, "rate") == ("small: m is 0.80 (95% CI 0.618 to 0.96) against above 0.6 with margin "
                                               "0.02: too wide to decide")
    assert threshold_phrase(above, "rate") == ("small: m is 0.80 (95% CI 0.6204 to 0.96) against above 0.6 with margin "
                                               "0.02: clears the bound by more than the margin")


def test_signed_and_money_bounds_get_digits_too():
    assert bound(-0.0996, "rate", True, edge=-0.1) == "-0.0996"
    assert interval_text(_estimate(-0.0996, 0.2), "rate", True, edge=-0.1) == "95% CI -0.0996 to +0.20"
    assert bound(0.0010004, "usd", edge=0.001) == "$0.0010004"
    assert bound(0.0009996, "usd", edge=0.001) == "$0.0009996"


def test_money_has_one_style():
    assert usd(0.000538, False) == "$0.000538"
    assert usd(2e-05, False) == "$0.00002"
    assert declared(2e-05, "usd") == "$0.00002"
    assert declared(2e-05) == "0.00002" and declared(0.05) == "0.05" and declared(100) == "100"
    cost = [Attempt("v", f"c{i}", r, "ok", True, {}, cost_usd=0.000538 + 1e-6 * i) for i in range(12) for r in (1, 2)]
    v = decide(Threshold("cost_usd", below=0.001, margin=2e-05), cost, SeriesFacts("s", "holdout", ("v",)))
    assert "e-0" not in v.text and "against below $0.001 with margin $0.00002" in v.text


def test_a_constant_cost_is_not_too_wide_to_decide():
    cost = [Attempt("v", f"c{i}", r, "ok", True, {}, cost_usd=0.000538) for i in range(12) for r in (1, 2)]
    v = decide(Threshold("cost_usd", below=0.001, margin=0.0001), cost, SeriesFacts("s", "holdout", ("v",)))
    assert (v.state, v.reason) == ("inconclusive", "uninformative")
    assert v.text == ("v: cost_usd is $0.000538 (95% CI $0.000538 to $0.000538) against below $0.001 with margin "
                      "$0.0001: every case measured the same, and a zero-width interval decides nothing.")
    assert "too wide" not in v.text


def test_lower_is_better_differences_say_which_way_they_point():
    attempts = [Attempt(variant, f"c{i}", 1, "ok", True, {}, cost_usd=cost * (1 + 0.01 * i))
                for i in range(12) for variant, cost in (("large", 0.002), ("small", 0.0005))]
    v = decide(Pair("compare", "large", "small", "cost_usd", 0.0001), attempts,   # "cheaper" needs a known bound
               SeriesFacts("s", "holdout", ("large", "small"), cost_bound=0.003))
    assert v.text.startswith("small vs large on cost_usd, lower is better (+ = small lower): +$0.00")
    assert v.state == "confirmed"


def test_the_launch_plan_line_says_1_variant():
    from types import SimpleNamespace

    from pytest_aqven.report import terminal

    lines = []
    tr = SimpleNamespace(write_sep=lambda *a, **k: None, write_line=lambda text, **k: lines.append(text))
    plan = SimpleNamespace(attempts=40, cases=20, repeats=2, variants=1, available=26, below_recommended=False,
                           recommended_cases=20, text="at 20 cases ...", search_pending=False, power=None,
                           capped=False, observed=None)
    terminal.launch_plans(tr, [("exp", "holdout", plan)])
    assert lines[0] == "exp (holdout): 40 attempts (20 cases × 2 repeats × 1 variant), 26 cases available"


@pytest.mark.parametrize("value, unit, signed, shown", [
    (0.99575, "rate", False, "0.996"),    # below 1: never 1.00
    (0.9999996, "rate", False, "0.9999996"),
    (1 - 2e-13, "rate", False, "1.00"),   # on 1 up to the betting bisection's grid
    (1.0, "rate", False, "1.00"),         # exactly 1 stays 1.00
    (0.004, "rate", False, "0.004"),      # above 0: never 0.00
    (-0.001, "rate", True, "-0.001"),     # a difference that is not 0: never -0.00 or +0.00
    (0.0, "rate", True, "+0.00"),
    (4.96, "ordinal", False, "4.96"),     # short of the top of a 1..5 scale: never 5.0
    (0.9996, "score", False, "0.9996"),
    (0.999, "ratio", False, "0.999"),
    (0.73, "rate", False, "0.73"),        # elsewhere: the unit's digits
    (1234.4, "ms", False, "1234"),        # whole-number units are not guarded
])
def test_a_value_off_a_whole_number_never_prints_as_one(value, unit, signed, shown):
    assert number(value, unit, signed) == shown


@pytest.mark.slow
def test_rare_event_rates_print_below_1():
    """0.99575 of passes with its interval: neither the value nor a bound below 1 reads 1.00."""
    cases = [400] * 199 + [317]
    attempts = binary_attempts("gpt", cases, 400)
    text = decide(Threshold("promises", above=0.99), attempts, facts()).text
    assert text.startswith("gpt: promises is 0.999 (95% CI 0.98 to 1.00) against above 0.99"), text


def _guard(metric, verdict, estimate, relative=False, direction="higher_is_better", edge=-0.05, margin=0.05):
    return Cell(metric=metric, role="guardrail", variant="small", baseline="large", direction=direction, bound=None,
                threshold=None, margin=margin, relative=relative, estimate=estimate, verdict=verdict, edge=edge)


def test_every_guardrail_says_its_interval_and_the_edge_it_was_held_to():
    log = Estimate(value=-math.log(0.11), low=-math.log(0.14), high=-math.log(0.09), method="paired-log-ratio",
                   cases=40, attempts=80, unit="log_ratio")
    cell = _guard("cost_of_pass", "pass", log, True, "lower_is_better", -math.log1p(0.5), 0.5)
    assert guardrail_phrase(cell) == ("guardrail cost_of_pass holds: small costs 0.11x large (95% CI 0.09x to 0.14x), "
                                      "within the relative margin 0.5")
    rate = Estimate(value=-0.01, low=-0.04, high=0.02, method="M2", cases=40, attempts=80, unit="rate")
    assert guardrail_phrase(_guard("success_rate", "pass", rate)) == (
        "guardrail success_rate holds: -0.01 (95% CI -0.04 to +0.02), within the margin 0.05")
    contrast = Estimate(value=-0.02, low=-0.08, high=0.03, method="M2-contrast", cases=40, attempts=80, unit="rate")
    assert guardrail_phrase(_guard("success_rate", "unclear", contrast, True, edge=0.0, margin=0.1)) == (
        "guardrail success_rate is unsettled: small - 0.9x large is -0.02 (95% CI -0.08 to +0.03), too wide to decide "
        "at the relative margin 0.1")
    cost = Estimate(value=-0.004, low=-0.0044, high=-0.0036, method="paired-t", cases=40, attempts=80, unit="usd")
    assert guardrail_phrase(_guard("cost_usd", "fail", cost, direction="lower_is_better", edge=-0.0005,
                                   margin=0.0005)) == (
        "guardrail cost_usd breaks, lower is better (+ = small lower): -$0.004 (95% CI -$0.0044 to -$0.0036), beyond "
        "the margin $0.0005")
    none = Estimate(value=0.0, low=None, high=None, method="M2", cases=40, attempts=80, unit="rate",
                    reliability="degenerate", degenerate="no_discordance")
    assert guardrail_phrase(_guard("success_rate", "unclear", none, True, edge=0.0)) == (
        "guardrail success_rate is unsettled: small - 0.95x large is +0.00 (no 95% CI: the variants agree on every "
        "case), no interval, so no decision")
