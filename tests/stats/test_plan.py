"""Launch plan: closed form, simulated search and the exact recommendation texts."""

import math

import pytest

from pytest_aqven.stats import Look, Pair, Threshold, launch_plan
from pytest_aqven.stats.plan import closed_form_cases, icc_of

from .helpers import binary_attempts

KINDS = {"promises": "binary", "critique": "continuous"}


def plan(question, **kw):
    args = dict(cases=40, repeats=5, variants=2, available=200, check_kinds=KINDS)
    args.update(kw)
    return launch_plan(question, **args)


def test_look_text():
    assert plan(Look(), cases=1, repeats=1).text == "a look runs 1 case once each and gives no verdict"
    p = plan(Look(), cases=12, repeats=3)
    assert (p.reason, p.text, p.attempts) == ("look", "a look runs 12 cases 3 times each and gives no verdict", 72)


def test_no_margin_and_no_history_texts():
    p = plan(Pair("compare", "a", "b", "promises", 0.0))
    assert (p.reason, p.text) == ("no_margin", "the question has no margin, so no number of cases can be recommended")
    assert p.recommended_cases == 40 and not p.below_recommended
    p = plan(Threshold("latency_p95_ms", below=2000, margin=100))
    assert (p.reason, p.spread_source) == ("no_history", "none")
    assert p.text == "no history or prior spread for latency_p95_ms: run the planned cases and read the interval"
    p = plan(Threshold("cost_usd", below=0.01, margin=0.001))
    assert p.reason == "no_history"


def test_closed_form_and_prior_spread():
    p = plan(Threshold("promises", above=0.75, margin=0.05), family="model")
    assert p.spread_source == "prior" and p.spread == pytest.approx(math.sqrt(0.75 * 0.25))
    assert p.icc == 0.3
    expected = math.ceil(7.848879734349 * p.spread**2 * (1 + 4 * 0.3) / 5 / 0.05**2)
    assert p.closed_form_cases == expected == closed_form_cases(p.spread, 0.05, 5, 0.3)
    se = p.spread / math.sqrt(40 * 5 / (1 + 4 * 0.3))
    assert p.half_width == pytest.approx(1.959963984540054 * se)
    assert p.mde == pytest.approx((1.959963984540054 + 0.8416212335729143) * se)


def test_recommendation_texts_exact():
    q = Threshold("promises", above=0.75, margin=0.05)
    p = plan(q, family="model", available=1000)
    needed = p.recommended_cases
    assert p.reason == "wide" and p.below_recommended and p.power >= 0.8
    power = f"about {needed} cases give an 80% chance to confirm when the truth is one margin past the edge"
    assert p.text == f"at 40 cases the expected half-width is ±{p.half_width:.2f}, wider than the 0.05 margin; {power}"
    p = plan(q, family="model", cases=needed + 10, available=needed + 10)
    assert p.reason == "enough" and not p.below_recommended
    power = f"about {needed} cases give an 80% chance to confirm when the truth is one margin past the edge"
    assert p.text == f"at {needed + 10} cases the expected half-width is ±{p.half_width:.2f}, within the 0.05 margin; {power}"
    p = plan(q, family="model", available=50)
    assert p.reason == "short_of_cases"
    assert p.text == (f"about {needed} cases give an 80% chance to confirm when the truth is one margin past the edge, "
                      "but only 50 are available")


@pytest.mark.slow
def test_search_is_reproducible_and_the_robust_family_needs_more_cases():
    q = Pair("noninferior", "a", "b", "promises", 0.05)
    robust = plan(q, seed=3)
    assert robust == plan(q, seed=3)
    model = plan(q, seed=3, family="model")
    assert robust.recommended_cases > model.recommended_cases


def test_the_pre_registered_figure_rests_on_the_question_and_history_gives_the_observed_one():
    """The same question plans the same cases before and after any series ran; the spread and ICC a finished
    series measured go into the figure at the rates observed."""
    from pytest_aqven.stats.plan import _assumptions, metric_info
    history = binary_attempts("a", [5, 5, 4, 0, 5, 5, 3, 5, 5, 1] * 3, 5)
    q = Threshold("promises", above=0.6, margin=0.05, variant="a")
    before, after = plan(q, family="model"), plan(q, history=history, family="model")
    assert after.spread_source == "prior" and after.icc == before.icc
    assert (after.recommended_cases, after.text) == (before.recommended_cases, before.text)
    assert before.observed is None and after.observed is not None
    spread, source, icc = _assumptions(q, metric_info("promises", {"promises": "binary"}), "a", 5, history,
                                       {"promises": "binary"}, None)
    groups = [[1.0] * k + [0.0] * (5 - k) for k in [5, 5, 4, 0, 5, 5, 3, 5, 5, 1] * 3]
    assert source == "history" and spread is not None and spread > 0
    assert icc == pytest.approx(icc_of([__import__("numpy").array(g) for g in groups]))
    assert 0 < icc < 1


def _series_at(rate: float, cases: int, repeats: int = 2, variant: str = "a"):
    """A finished series observed at `rate`: a fixed share of the cases fail every repeat."""
    failing = round(cases * (1 - rate))
    return binary_attempts(variant, [0] * failing + [repeats] * (cases - failing), repeats)


def test_a_threshold_observed_far_past_its_edge_is_told_the_cases_it_needs_at_that_rate():
    """Issue 20: 0.80 observed against the edge 0.62 is told its own figure (tens of cases), beside the
    pre-registered one (one margin past the edge: thousands), each labelled."""
    q = Threshold("promises", above=0.6, margin=0.02, variant="a")
    p = plan(q, cases=30, repeats=2, variants=1, available=64, history=_series_at(0.8, 30), family="model")
    assert p.recommended_cases > 1000 and "when the truth is one margin past the edge" in p.text
    o = p.observed
    assert (o.value, o.cases, o.edge) == (pytest.approx(0.8), 30, pytest.approx(0.62))
    assert 20 <= o.recommended_cases <= 120 and o.power >= 0.8 and not o.capped
    assert o.text == (f"at the rates observed so far (promises 0.80 over 30 cases, the edge 0.62), about "
                      f"{o.recommended_cases} cases give an 80% chance to confirm (simulated)")
    # not run, nor cached: the closed form, said so
    quick = plan(q, cases=30, repeats=2, variants=1, available=64, history=_series_at(0.8, 30), simulate=False)
    assert quick.observed.search_pending and quick.observed.recommended_cases is None
    assert quick.observed.text == ("at the rates observed so far (promises 0.80 over 30 cases, the edge 0.62), `aqven "
                                   "plan` gives the cases for an 80% chance to confirm (a simulated search: the closed "
                                   "form is too optimistic for these intervals to say)")


def test_an_observed_value_on_the_wrong_side_of_the_edge_confirms_at_no_number_of_cases():
    p = plan(Threshold("promises", above=0.6, margin=0.02, variant="a"), cases=30, repeats=2, variants=1,
             history=_series_at(0.5, 30), simulate=False)
    assert p.observed.recommended_cases is None
    assert p.observed.text == ("at the rates observed so far (promises 0.50 over 30 cases, the edge 0.62), no number "
                               "of cases confirms it: what was observed is not past the edge")


@pytest.mark.slow
def test_a_noninferiority_observed_near_its_margin_needs_many_more_cases_than_one_margin_past_the_edge():
    """Issue 20: an observed -0.13 against a 0.15 margin needs about a thousand cases, not the 80-odd the
    pre-registered truth (a difference of 0) needs."""
    base = binary_attempts("a", [2] * 60 + [0] * 40, 2)
    cand = binary_attempts("b", [2] * 47 + [0] * 53, 2)
    q = Pair("noninferior", "a", "b", "promises", 0.15)
    p = plan(q, cases=100, repeats=2, variants=2, available=5000, history=base + cand, family="model")
    assert p.observed.value == pytest.approx(-0.13) and p.observed.edge == pytest.approx(-0.15)
    assert p.observed.recommended_cases > 5 * p.recommended_cases
    assert p.observed.text.startswith("at the rates observed so far (promises -0.13 over 100 cases, the edge -0.15), ")


def test_a_search_that_reaches_its_cap_says_so(monkeypatch):
    import pytest_aqven.stats.plan as planning

    monkeypatch.setattr(planning, "simulated_power", lambda *a, **k: 0.67)
    p = plan(Threshold("promises", above=0.75, margin=0.05), family="model", available=5000)
    assert p.capped and p.recommended_cases == planning.MAX_SIMULATED_CASES and p.power == 0.67
    o = plan(Threshold("promises", above=0.6, margin=0.02, variant="a"), cases=30, repeats=2, variants=1,
             history=_series_at(0.8, 30), family="model").observed
    assert o.capped and o.text.endswith(f"the simulated search reached its cap, {planning.MAX_SIMULATED_CASES} "
                                        "cases, with a 67% chance to confirm: more cases are needed")


def test_the_same_data_gives_the_same_figure_whatever_order_it_was_read_in():
    import random

    history = _series_at(0.8, 30, variant="a") + _series_at(0.7, 30, variant="b")
    shuffled = list(history)
    random.Random(4).shuffle(shuffled)
    q = Threshold("promises", above=0.6, margin=0.02)      # every variant must clear: planned for the weaker, b
    first, second = (plan(q, cases=30, repeats=2, variants=2, history=h, simulate=False) for h in (history, shuffled))
    assert first == second and first.observed.value == pytest.approx(0.7)
