"""Stopping a series when its verdict is decided (stats/early.py): the betting sequence sized by the planned
cases, the decision at a prefix, which questions may stop, and the tails under optional stopping."""

import numpy as np
import pytest

from pytest_aqven.stats import Look, Pair, Threshold, betting, early
from pytest_aqven.stats.betting import case_order
from pytest_aqven.stats.model import Attempt, CheckValue, Guardrail
from pytest_aqven.stats.samples import HIGHER, AttemptTable
from pytest_aqven.stats.verdicts import decide, decide_table

from . import stopping
from .helpers import binary_attempts, facts

TAIL = 0.035  # 2.5% + 3 standard errors at 2,000 series (test_validation.py's band)
SALT = "pkg/exp"


def test_the_final_look_is_todays_and_a_prefix_reads_the_same_capital():
    rng = np.random.default_rng(1)
    x = rng.beta(8, 2, 60)
    assert np.array_equal(betting.interval(x), betting.interval(x, planned=60))
    # a prefix sized by the planned cases is not the prefix sized by itself (a new test at each look)
    assert betting.lower_bound(x[:20], planned=60) != betting.lower_bound(x[:20])
    # the look where the bound first clears m, read from one capital process, is the bisection's at every prefix
    for m in (0.5, 0.6, 0.7):
        after = int(betting.rejected_after(x, m, planned=60))
        cleared = [bool(betting.lower_bound(x[:k], planned=60) > m) for k in range(1, 61)]
        assert after > 0 and cleared == [k >= after for k in range(1, 61)], m


def _prefix(attempts, planned_names, k):
    """The attempts of the first k cases of the betting order."""
    first = {planned_names[i] for i in case_order(SALT, planned_names)[:k]}
    return [a for a in attempts if a.case in first]


def test_a_clear_threshold_stops_confirmed_and_says_so():
    attempts = binary_attempts("gpt", [10] * 100, 10)
    names = sorted({a.case for a in attempts})
    question = Threshold("success_rate", above=0.5, margin=0.05)
    f = facts(total_attempts=1000, salt=SALT)
    stops = [k for k in range(1, 100)
             if early.decided(question, AttemptTable(_prefix(attempts, names, k), f.check_kinds), f, 100)]
    first = stops[0]
    assert stops == list(range(first, 100))    # once decided, every later look is decided too
    prefix = _prefix(attempts, names, first)
    verdict = decide(question, prefix, facts(total_attempts=len(prefix), salt=SALT, planned_cases=100))
    assert verdict.state == "confirmed"
    assert f"stopped early after {first} of 100 cases, decided on the betting bound" in verdict.text
    assert verdict.cells[0].estimate.method == early.METHOD and verdict.cells[0].decided_by == "betting"
    # the same prefix without the planned cases is decided as a series of its own (a new test)
    assert "stopped early" not in decide(question, prefix, facts(total_attempts=len(prefix), salt=SALT)).text


def test_a_refuted_primary_stops_and_an_unmeasured_attempt_does_not():
    attempts = binary_attempts("gpt", [2] * 80, 10)
    names = sorted({a.case for a in attempts})
    question = Threshold("success_rate", above=0.8, margin=0.05)
    f = facts(total_attempts=800, salt=SALT)
    prefix = _prefix(attempts, names, 30)
    cells = early.decided(question, AttemptTable(prefix, f.check_kinds), f, 80)
    assert cells is not None and early.state(*cells) == "refuted"
    lost = [Attempt(a.variant, a.case, a.repeat, "infra_error", None) if i == 0 else a for i, a in enumerate(prefix)]
    assert early.decided(question, AttemptTable(lost, f.check_kinds), f, 80) is None


def test_a_pair_stops_only_when_every_guardrail_clears_too():
    better = binary_attempts("cand", [10] * 60, 5) + binary_attempts("base", [1] * 60, 5)
    names = sorted({a.case for a in better})
    f = facts(variants=("base", "cand"), salt=SALT)
    compare = Pair("compare", "base", "cand", "success_rate", 0.05)
    table = AttemptTable(_prefix(better, names, 30), f.check_kinds)
    primaries, guards = early.decided(compare, table, f, 60)
    assert primaries[0].verdict == "pass" and not guards
    guarded = Pair("compare", "base", "cand", "success_rate", 0.05,
                   guardrails=(Guardrail("schema_valid_first_try", 0.05),))   # no data: unclear, runs on
    assert early.decided(guarded, table, f, 60) is None


@pytest.mark.parametrize("question, reason", [
    (Threshold("cost_usd", below=0.1), "cost_usd has no distribution-free bound"),
    (Threshold("latency_p95_ms", below=900), "latency_p95_ms has no distribution-free bound"),
    (Pair("compare", "a", "b", "success_rate", guardrails=(Guardrail("cost_of_pass", 0.1, relative=True),)),
     "cost_of_pass has no distribution-free bound"),
    (Look(), "a look gives no verdict"),
    (Threshold("success_rate", above=0.5), None),
    (Threshold("tone", above=3.0), None),
])
def test_which_questions_may_stop(question, reason):
    f = facts(check_kinds={"tone": "ordinal"}, check_scales={"tone": (1.0, 5.0)})
    assert early.cannot_stop(question, f) == reason
    assert early.cannot_stop(Threshold("success_rate", above=0.5), facts(family="model")) == \
        "the model family's verdict does not rest on the distribution-free bound"


def test_the_simulations_stop_look_is_the_verdicts_own():
    """The vectorised stop look (launch plan, validation) against `early.decided` look by look."""
    rng = np.random.default_rng(7)
    planned, question = 40, Threshold("success_rate", above=0.7, margin=0.05)
    f = facts(total_attempts=planned * 5, salt=SALT)
    for series in range(6):
        passes = rng.binomial(5, rng.choice([0.95, 0.6, 0.8]), planned)
        attempts = binary_attempts("gpt", passes, 5)
        names = sorted({a.case for a in attempts})
        values = (passes / 5.0)[case_order(SALT, names)]
        clear, fail = early.clear_and_fail(values, (0.0, 1.0), 0.75, HIGHER, planned)
        look, confirmed = early.stop_look([clear], [fail])
        looks = [k for k in range(1, planned + 1)
                 if early.decided(question, AttemptTable(_prefix(attempts, names, k), f.check_kinds), f, planned)]
        assert int(look) == (looks[0] if looks else 0), series
        if looks:
            cells = early.decided(question, AttemptTable(_prefix(attempts, names, looks[0]), f.check_kinds), f, planned)
            assert (early.state(*cells) == "confirmed") == bool(confirmed)


def test_a_finding_decided_again_reads_the_stop():
    """`aqven check` recomputes a finding with decide_table: the planned cases give back the same verdict."""
    attempts = binary_attempts("gpt", [10] * 100, 10)
    names = sorted({a.case for a in attempts})
    prefix = _prefix(attempts, names, 40)
    f = facts(total_attempts=len(prefix), salt=SALT, planned_cases=100)
    one = decide_table(Threshold("success_rate", above=0.5, margin=0.05), AttemptTable(prefix, f.check_kinds), f)
    again = decide_table(Threshold("success_rate", above=0.5, margin=0.05), AttemptTable(prefix[::-1], f.check_kinds), f)
    assert one == again and one.state == "confirmed"


def test_scores_on_a_declared_scale_stop():
    attempts = [Attempt("gpt", f"c{i:02d}", 1, "ok", True, {"tone": CheckValue("passed", 5.0)}) for i in range(50)]
    f = facts(check_kinds={"tone": "ordinal"}, check_scales={"tone": (1.0, 5.0)}, salt=SALT)
    cells = early.decided(Threshold("tone", above=3.0, margin=0.2), AttemptTable(attempts[:20], f.check_kinds), f, 50)
    assert cells is not None and early.state(*cells) == "confirmed"


def _bad(rows, limit):
    return [f"{r['test']} {r['cell']}: confirmed={r['confirmed']:.4f} refuted={r['refuted']:.4f}"
            for r in rows if r["past"] == 0 and (r["confirmed"] > limit or r["refuted"] > limit)]


@pytest.mark.slow
def test_optional_stopping_keeps_the_tails_small_grid():
    rows = stopping.edge_rows(400, planned_grid=(30, 100))
    assert not _bad(rows, 0.025 + 3 * np.sqrt(0.025 * 0.975 / 400)), _bad(rows, 0.05)


def test_a_clear_effect_is_decided_by_a_fraction_of_the_planned_cases():
    rows = {(r["cell"], r["past"]): r for r in stopping.past_rows(300, planned_grid=(100,))}
    at_edge, one, two = (rows["threshold rate C=100 above", past] for past in (0.0, 1.0, 2.0))
    assert at_edge["share"] == 1.0 and one["share"] < 1.0 and two["share"] < 0.5
    assert rows["compare rate 0.70->0.85 C=100", 2.0]["share"] < 0.7


@pytest.mark.slow
def test_optional_stopping_keeps_every_tail_at_2000_series():
    rows = stopping.edge_rows(2000) + stopping.past_rows(2000)
    assert not _bad(rows, TAIL), "\n".join(_bad(rows, TAIL))


def test_the_launch_plan_says_how_many_cases_stopping_early_is_expected_to_use():
    from pytest_aqven.stats.plan import launch_plan
    question = Threshold("success_rate", above=0.8, margin=0.05)
    plan = launch_plan(question, cases=200, repeats=5, variants=1, available=300, check_kinds={}, simulate=True)
    assert plan.stop_early_cases is not None and 100 < plan.stop_early_cases < 200
    assert f"with --aqven-stop-early a series of 200 cases is expected to use about {plan.stop_early_cases:.0f}" \
        in plan.text
    cached = launch_plan(question, cases=200, repeats=5, variants=1, available=300, check_kinds={}, simulate=False)
    assert cached.stop_early_cases is None          # not simulated, nothing cached: the closed form alone
    model = launch_plan(question, cases=200, repeats=5, variants=1, available=300, check_kinds={}, family="model")
    assert model.stop_early_cases is None and "stop-early" not in model.text
    cost = launch_plan(Threshold("cost_usd", below=0.01, margin=0.001), cases=200, repeats=5, variants=1,
                       available=300, check_kinds={})
    assert cost.stop_early_cases is None
