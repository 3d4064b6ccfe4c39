"""cost_usd: the lognormal bound on heavy right tails, the per-attempt cost bound, and what the sentence says."""

import dataclasses

import numpy as np
import pytest

from pytest_aqven.stats import Attempt, Guardrail, Pair, SeriesFacts, Threshold, betting, decide, intervals
from pytest_aqven.stats.estimates import cost_interval, log_spread
from pytest_aqven.stats.samples import build_sample, metric_info

from . import validation as V

NO_BOUND = "(no per-attempt cost bound is known)"


def _attempts(costs, variant="v"):
    return [Attempt(variant, f"c{i:03d}", r + 1, "ok", True, cost_usd=float(c))
            for i, row in enumerate(costs) for r, c in enumerate(row)]


def _facts(**extra):
    return SeriesFacts(**{"series_id": "sid", "split": "holdout", "variants": ("v",), "salt": "pkg/exp", **extra})


def _costs(seed=1, cases=30, repeats=3, sigma=1.5):
    rng = np.random.default_rng(seed)
    return 0.01 * np.exp(rng.normal(0, sigma, (cases, 1)) + rng.normal(0, 0.5, (cases, repeats)))


def test_the_upper_bound_takes_the_lognormal_bound_on_a_heavy_tail():
    """30 cases of lognormal costs (sigma 1.5) that missed the far tail: the skewness-corrected t's upper
    bound is a third of the lognormal one."""
    costs = _costs(6)
    sample = build_sample(_attempts(costs), "v", metric_info("cost_usd", {}), {})
    means = costs.mean(axis=1)
    _, _, skew_high = intervals.skew_t_mean(means, right_skewed=True)
    lognormal_high = intervals.lognormal_mean_high(*log_spread(sample))
    estimate = decide(Threshold("cost_usd", below=1.0), _attempts(costs), _facts()).metrics["v"]["cost_usd"]
    assert lognormal_high > skew_high
    assert estimate.high == pytest.approx(float(lognormal_high))
    assert estimate.low == pytest.approx(float(intervals.skew_t_mean(means, right_skewed=True)[1]))


def test_the_lognormal_bound_is_the_datas_alone():
    """A fixed seed for the pivot's draws: the same data, the same bound, in any order of attempts."""
    costs = _costs(2)
    attempts = _attempts(costs)
    first = decide(Threshold("cost_usd", below=1.0), attempts, _facts()).text
    assert decide(Threshold("cost_usd", below=1.0), attempts[::-1], _facts(series_id="other")).text == first


def test_left_skewed_log_costs_leave_the_skewness_corrected_t():
    """Many costs near 0 (exponential: log costs skewed about -1.14) are not lognormal: no lognormal bound."""
    costs = np.random.default_rng(7).exponential(0.01, (30, 1))
    sample = build_sample(_attempts(costs), "v", metric_info("cost_usd", {}), {})
    assert intervals.skewness(log_spread(sample)[0]) < -1
    estimate = decide(Threshold("cost_usd", below=1.0), _attempts(costs), _facts()).metrics["v"]["cost_usd"]
    assert estimate.high == pytest.approx(float(intervals.skew_t_mean(costs.mean(axis=1), right_skewed=True)[2]))
    assert intervals.lognormal_mean_high(*log_spread(sample)) > estimate.high


def test_a_free_attempt_leaves_the_skewness_corrected_t():
    costs = _costs(3)
    costs[0, 0] = 0.0
    sample = build_sample(_attempts(costs), "v", metric_info("cost_usd", {}), {})
    assert log_spread(sample) is None
    estimate = decide(Threshold("cost_usd", below=1.0), _attempts(costs), _facts()).metrics["v"]["cost_usd"]
    assert estimate.high == pytest.approx(float(intervals.skew_t_mean(costs.mean(axis=1), right_skewed=True)[2]))


def test_without_a_bound_the_sentence_says_so():
    verdict = decide(Threshold("cost_usd", below=0.001), _attempts(_costs()), _facts())
    assert verdict.text.endswith(f"{NO_BOUND}.") and verdict.cells[0].estimate.cost_bound is None


@pytest.mark.parametrize("metric", ["cost_usd", "cost_of_pass"])
def test_without_a_bound_the_upper_bound_decides_nothing(metric):
    """No sample rules out attempts dearer than any it holds: "cheaper than" is not confirmed, nor "dearer
    than" refuted, on the upper bound of a cost with no per-attempt bound known; the sentence says why.
    The lower bound still decides, the model family keeps the upper bound, and a known bound decides."""
    costs = _costs()
    below = decide(Threshold(metric, below=1.0), _attempts(costs), _facts())
    assert (below.state, below.reason, below.cells[0].verdict) == ("inconclusive", "no_cost_bound", "unclear")
    assert below.cells[0].estimate.high < 1.0
    assert below.text.endswith("against below $1 with margin $0: not decided, as no per-attempt cost bound is "
                               "known: attempts dearer than any measured could lift the mean past the edge.")
    assert decide(Threshold(metric, above=1.0), _attempts(costs), _facts()).reason == "no_cost_bound"
    assert decide(Threshold(metric, below=0.001), _attempts(costs), _facts()).state == "refuted"
    assert decide(Threshold(metric, below=1.0), _attempts(costs), _facts(family="model")).state == "confirmed"
    known = decide(Threshold(metric, below=1.0), _attempts(costs), _facts(cost_bound=float(costs.max()) * 2))
    assert known.state == "confirmed" and NO_BOUND not in known.text


def test_a_cost_of_pass_bound_hulls_m7_with_the_ratio_of_betting_intervals():
    """cost_of_pass with a known bound: the mean cost per attempt on [0, bound] over the pass rate, each
    betting interval at alpha / 2, hulled with M7."""
    costs = _costs()
    bound = float(costs.max()) * 2
    attempts = [dataclasses.replace(a, passed=(i % 3 != 0)) for i, a in enumerate(_attempts(costs))]
    estimate = decide(Threshold("cost_of_pass", below=1.0), attempts, _facts(cost_bound=bound)).cells[0].estimate
    passes = np.array([[i % 3 != 0 for i in range(r * 3, r * 3 + 3)] for r in range(30)], float)
    order = np.array(betting.case_order("pkg/exp", [f"c{i:03d}" for i in range(30)]))
    cost_low, cost_high = betting.interval_on(costs.mean(axis=1)[order], 0.0, bound, 0.025)
    pass_low, pass_high = betting.interval(passes.mean(axis=1)[order], 0.025)
    assert estimate.cost_bound == bound and estimate.family == "robust"
    assert (estimate.betting_low, estimate.betting_high) == (pytest.approx(cost_low / pass_high),
                                                             pytest.approx(cost_high / pass_low))
    assert estimate.low == min(estimate.model_low, estimate.betting_low)
    assert estimate.high == max(estimate.model_high, estimate.betting_high)


@pytest.mark.parametrize("family", ["robust", "model"])
def test_a_known_bound_hulls_the_interval_with_the_betting_one(family):
    costs = _costs()
    bound = float(costs.max()) * 2
    verdict = decide(Threshold("cost_usd", below=1.0), _attempts(costs), _facts(cost_bound=bound, family=family))
    estimate = verdict.cells[0].estimate
    if family == "model":  # the model family uses no bound: the sentence says none decided it
        assert estimate.cost_bound is None and estimate.betting_high is None and NO_BOUND in verdict.text
        return
    assert estimate.cost_bound == bound and NO_BOUND not in verdict.text
    assert (estimate.low, estimate.high) == (min(estimate.model_low, estimate.betting_low),
                                             max(estimate.model_high, estimate.betting_high))
    assert "betting" in (estimate.low_from, estimate.high_from)


def test_a_bound_an_attempt_passed_is_not_used():
    costs = _costs()
    verdict = decide(Threshold("cost_usd", below=1.0), _attempts(costs), _facts(cost_bound=float(costs.max()) / 2))
    assert verdict.cells[0].estimate.cost_bound is None and NO_BOUND[1:-1] in verdict.text


def test_a_cost_guardrail_with_a_known_bound():
    base, cand = _costs(4), _costs(5)
    attempts = _attempts(base, "a") + _attempts(cand, "b")
    pair = Pair("noninferior", "a", "b", "cost_usd", 0.01, guardrails=(Guardrail("cost_usd", 0.1, relative=True),))
    facts = dataclasses.replace(_facts(), variants=("a", "b"))
    unbounded = decide(pair, attempts, facts)
    assert unbounded.text.count(NO_BOUND) == 2
    bound = float(max(base.max(), cand.max())) * 2
    bounded = decide(pair, attempts, dataclasses.replace(facts, cost_bound=bound))
    assert NO_BOUND not in bounded.text
    for cell in bounded.cells:
        assert cell.estimate.cost_bound == bound and cell.estimate.betting_low is not None


def test_the_cost_grid_is_decides_own():
    """cost_interval over simulated series gives the verdicts `decide` gives on the same data."""
    costs, truth = V.cost_draws("attempt sigma 2", np.random.default_rng(6), 20, 12, 3)
    for question in V.thresholds(truth, truth / 10, "cost_usd"):
        grid = V.no_upper_bound(question, V.threshold_verdicts(question, *V.bounds(cost_interval(
            costs.mean(axis=-1), V._log_spread(costs), "robust"))))
        for s in range(20):
            cell = decide(question, _attempts(costs[s]), _facts()).cells[0]
            assert cell.verdict == grid[s], (question, s)


def test_a_finding_decided_again_uses_its_recorded_bound():
    """`aqven check` decides a finding again from its data and method: a cost bound it used is in its
    method (`method.cost_bound`, written only when known), so the recomputed verdict is the same."""
    from pytest_aqven.findings.verify import recompute
    from pytest_aqven.stats.evidence import question_dict, sufficient_data
    from pytest_aqven.stats.samples import AttemptTable

    costs = _costs()
    question = Threshold("cost_usd", below=1.0)
    facts = _facts(cost_bound=float(costs.max()) * 2)
    table = AttemptTable(_attempts(costs), {})
    verdict = decide(question, _attempts(costs), facts)
    document = {"series": "sid", "scope": {"split": "holdout"},
                "method": {"question": question_dict(question), "variants": ["v"], "check_kinds": {},
                           "unvalidated_judges": {}, "family": "robust", "salt": facts.salt,
                           "cost_bound": facts.cost_bound},
                "data": sufficient_data(table, facts, verdict.metrics)}
    again = recompute(document)
    assert again.text == verdict.text and again.cells == verdict.cells
    del document["method"]["cost_bound"]
    assert NO_BOUND[1:-1] in recompute(document).text


def _runaway_pair(seed=3, cases=30):
    """A baseline of typical costs and a candidate at half of them that once ran away: cheaper as measured."""
    rng = np.random.default_rng(seed)
    base, cand = rng.uniform(0.5, 1.5, (cases, 1)), 0.5 * rng.uniform(0.5, 1.5, (cases, 1))
    return base, cand, dataclasses.replace(_facts(), variants=("a", "b"))


@pytest.mark.parametrize("metric", ["cost_usd", "cost_of_pass"])
def test_without_a_bound_a_pair_is_not_called_cheaper(metric):
    """A comparison needs the candidate's upper bound to call it cheaper (or its cost guardrail held): without a
    per-attempt bound that side decides nothing, and the sentence says why. The other side still decides,
    the model family and a known bound decide as before."""
    base, cand, facts = _runaway_pair()
    attempts = _attempts(base, "a") + _attempts(cand, "b")
    cheaper = decide(Pair("compare", "a", "b", metric, 0.01), attempts, facts)
    assert (cheaper.state, cheaper.reason, cheaper.cells[0].verdict) == ("inconclusive", "no_cost_bound", "unclear")
    assert cheaper.cells[0].estimate.low > cheaper.cells[0].edge
    assert cheaper.text.endswith(f"not decided, as {NO_BOUND[1:-1]}: attempts of b dearer than any measured "
                                 "could undo it.")
    dearer = decide(Pair("compare", "b", "a", metric, 0.01), attempts, facts)   # a, dearer, as candidate
    assert dearer.state == "refuted" and dearer.text.endswith(f"{NO_BOUND}.")
    assert decide(Pair("compare", "a", "b", metric, 0.01), attempts,
                  dataclasses.replace(facts, family="model")).state == "confirmed"
    known = dataclasses.replace(facts, cost_bound=float(base.max()) * 2)   # cost_of_pass keeps its paired ratio
    for candidate, state in [("b", "confirmed"), ("a", "refuted")]:
        bounded = decide(Pair("compare", "b" if candidate == "a" else "a", candidate, metric, 0.01), attempts, known)
        assert bounded.state == state and NO_BOUND not in bounded.text, bounded.text


@pytest.mark.parametrize("relative", [False, True])
def test_without_a_bound_a_cost_guardrail_is_unsettled(relative):
    base, cand, facts = _runaway_pair()
    attempts = [dataclasses.replace(a, passed=i % 2 == 0) for i, a in enumerate(_attempts(base, "a") + _attempts(cand, "b"))]
    pair = Pair("noninferior", "a", "b", "success_rate", 0.5,
                guardrails=(Guardrail("cost_usd", 0.1, relative=relative),))
    verdict = decide(pair, attempts, facts)
    assert verdict.cells[0].verdict == "pass" and verdict.cells[1].verdict == "unclear"
    assert (verdict.state, verdict.reason) == ("inconclusive", "no_cost_bound")
    assert "guardrail cost_usd is unsettled" in verdict.text and "attempts of b dearer than any measured" in verdict.text
    known = decide(pair, attempts, dataclasses.replace(facts, cost_bound=float(base.max()) * 2))
    assert known.state == "confirmed"


def test_the_runaway_grid_is_decides_own():
    """`cost_runaway_rows`' rule gives the verdicts `decide` gives on the same data."""
    from pytest_aqven.stats.edges import without_candidate_high
    from pytest_aqven.stats.samples import LOWER

    rng = np.random.default_rng(8)
    base = rng.uniform(0.5, 1.5, (20, 30, 1))
    cand = V._runaway_candidate("rare", rng, 20, 30, 1, 0.9)
    question = Pair("compare", "a", "b", "cost_usd", V.RUNAWAY_MARGIN, LOWER)
    grid = without_candidate_high(LOWER, V.mean_pair_verdicts(question, base.mean(-1), cand.mean(-1), "robust", None,
                                                               direction=LOWER))
    facts = dataclasses.replace(_facts(), variants=("a", "b"))
    for s in range(20):
        cell = decide(question, _attempts(base[s], "a") + _attempts(cand[s], "b"), facts).cells[0]
        assert cell.verdict == grid[s], s
