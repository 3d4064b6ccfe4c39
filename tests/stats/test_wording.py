"""Sentences never contradict themselves: digits enough to show a bound's side of the edge, no "too wide"
for an interval of no width, a direction for lower-is-better differences, one money style."""

import pytest

from pytest_aqven.stats import Attempt, Pair, SeriesFacts, Threshold, decide
from pytest_aqven.stats.model import Estimate
from pytest_aqven.stats.verdicts import threshold_cell
from pytest_aqven.stats.wording import bound, declared, interval_text, threshold_phrase, usd


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
    below = threshold_cell(q, "small", _estimate(0.618, 0.96), "higher_is_better")
    above = threshold_cell(q, "small", _estimate(0.6204, 0.96), "higher_is_better")
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
    v = decide(Pair("compare", "large", "small", "cost_usd", 0.0001), attempts,
               SeriesFacts("s", "holdout", ("large", "small")))
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
