"""Attempts selected but not measured (budget_cut, infrastructure errors, cancelled) never help a claim: they count
together toward the 5% rule, and a cell passes (fails) only if it still does with them counted against (for) it."""

import pytest

from pytest_aqven.stats import Attempt, CheckValue, Pair, Threshold
from pytest_aqven.stats.evidence import EvidenceTable, sufficient_data
from pytest_aqven.stats.missing import ImputedTable, sides
from pytest_aqven.stats.samples import AttemptTable, metric_info
from pytest_aqven.stats.verdicts import decide, decide_table

from .. import findings_util
from .helpers import binary_attempts, facts

SKIPPED = {"promises": CheckValue("skipped", None)}


def unmeasured(variant, cases, repeats, outcome="infra_error", first_case=0):
    return [Attempt(variant, f"case{c:03d}", r, outcome, None, SKIPPED)
            for c in range(first_case, first_case + cases) for r in range(1, repeats + 1)]


def test_the_failing_cases_timing_out_at_exactly_five_percent_confirm_nothing():
    """200 cases x 20 repeats, cases 190-199 always fail and time out: measured, 1.00; counted, 0.95."""
    data = binary_attempts("gpt", [20] * 190, 20) + unmeasured("gpt", 10, 20, first_case=190)
    v = decide(Threshold("promises", above=0.96), data, facts())
    assert (v.state, v.reason) == ("inconclusive", "unmeasured")
    cell = v.cells[0]
    assert cell.estimate.value == 1.0 and cell.estimate.low > 0.96      # the measured cases clear it
    assert cell.counted_against.value == pytest.approx(0.95) and cell.counted_against.low < 0.96
    assert v.text == ("gpt: promises is 1.00 (95% CI 0.98 to 1.00) against above 0.96 with margin 0: decided only "
                      "without the unmeasured attempts (with them: 0.95, 95% CI 0.87 to 0.98); 200 of 4000 attempts "
                      "were not measured (200 infrastructure errors; 10 of 200 cases had none measured) and count "
                      "against the claim.")
    assert decide(Threshold("promises", above=0.8), data, facts()).state == "confirmed"   # a claim they cannot undo


def test_a_refutation_must_hold_with_the_unmeasured_counted_for_the_claim():
    """A claim below 0.62 that 60 cases at 0.7 refute: not once 3 more cases (30 of 630 attempts) went unmeasured,
    which at 0 would leave it undecided."""
    measured = binary_attempts("gpt", [7] * 60, 10)
    v = decide(Threshold("promises", below=0.62), measured, facts())
    assert v.state == "refuted"
    v = decide(Threshold("promises", below=0.62), measured + unmeasured("gpt", 3, 10, "budget_cut", 60), facts())
    assert (v.state, v.reason) == ("inconclusive", "unmeasured")
    assert v.cells[0].counted_against.value < v.cells[0].estimate.value        # counted for a claim "below"
    assert "30 of 630 attempts were not measured (30 cut by the spend cap; 3 of 63 cases had none measured)" in v.text


def test_budget_cut_infrastructure_errors_and_cancelled_count_together_toward_the_rule():
    data = binary_attempts("gpt", [20] * 50, 20)            # 1000 attempts
    q = Threshold("promises", above=0.5)
    each = {o: unmeasured("gpt", 1, 20, o, first_case=i) for i, o in enumerate(("infra_error", "budget_cut",
                                                                                 "cancelled"))}
    for outcome, attempts in each.items():                  # 20 of 1020: under 5% alone
        assert decide(q, data + attempts, facts()).state == "confirmed", outcome
    v = decide(q, data + [a for attempts in each.values() for a in attempts], facts())   # 60 of 1060
    assert (v.state, v.reason, v.text) == ("invalid", "budget_cut", "No finding: 60 of 1060 attempts were not "
                                           "measured (20 infrastructure errors, 20 cut by the spend cap, 20 cancelled).")
    v = decide(q, data + each["infra_error"] + each["cancelled"] + unmeasured("gpt", 1, 20, first_case=3), facts())
    assert (v.state, v.reason) == ("invalid", "infra_errors")
    assert decide(q, data, facts(total_attempts=1060)).reason == "infra_errors"      # 60 never ran


def test_a_comparison_counts_the_candidates_unmeasured_as_failures_and_the_baselines_as_passes():
    f = facts(variants=("base", "cand"))
    pair = Pair("compare", "base", "cand", "promises", 0.3)
    assert sides(pair, f, against=True) == {("cand", "promises"): False, ("base", "promises"): True}
    assert sides(pair, f, against=False) == {("cand", "promises"): True, ("base", "promises"): False}
    lower = Pair("compare", "base", "cand", "latency_p50_ms", 10.0, guardrails=())
    assert sides(lower, f, against=True) == {("cand", "latency_p50_ms"): True, ("base", "latency_p50_ms"): False}
    base = binary_attempts("base", [4] * 60, 10)
    cand = binary_attempts("cand", [9] * 60, 10)
    assert decide(pair, base + cand, f).state == "confirmed"
    v = decide(pair, base + cand + unmeasured("cand", 3, 10), f)     # 30 of 1230: 3 of 60 cases at 0 still lead
    assert v.state == "confirmed" and v.cells[0].counted_against is None
    neither = unmeasured("cand", 3, 10, first_case=60) + unmeasured("base", 3, 10, first_case=60)
    v = decide(pair, base + cand + neither, f)         # 3 cases neither measured: -1 each, against the claim
    assert (v.state, v.reason) == ("inconclusive", "unmeasured")
    assert v.cells[0].counted_against.value == pytest.approx((60 * 0.5 - 3) / 63)


def test_an_unbounded_metric_takes_the_most_extreme_value_measured():
    f = facts()
    data = [Attempt("gpt", f"case{c:03d}", r, "ok", True, {}, latency_ms=100.0 + c) for c in range(40)
            for r in range(1, 21)]
    table = AttemptTable(data + unmeasured("gpt", 40, 1), f.check_kinds)
    q = Threshold("latency_p50_ms", below=128.0)
    info = metric_info("latency_p50_ms", f.check_kinds)
    for against, value in ((True, 139.0), (False, 100.0)):     # the slowest or the fastest measured
        sample = ImputedTable(table, sides(q, f, against), f.variants).sample("gpt", info)
        assert sample.n_attempts == 840 and (sample.flat == value).sum() == 20 + 40
    assert decide_table(q, table, f).state == "confirmed"
    errors = ImputedTable(table, {("gpt", "infra_error_rate"): True}, f.variants)   # the errors are its data
    assert errors.sample("gpt", metric_info("infra_error_rate", {})).n_attempts == 840


def test_the_findings_data_decide_the_same_verdict_again():
    data = binary_attempts("gpt", [20] * 190, 20) + unmeasured("gpt", 10, 20, first_case=190)
    f = facts()
    table = AttemptTable(data, f.check_kinds)
    verdict = decide_table(Threshold("promises", above=0.96), table, f)
    written = sufficient_data(table, f, verdict.metrics)
    assert written["unmeasured"]["budget_cut"] == 0 and sum(written["unmeasured"]["variants"]["gpt"].values()) == 200
    again = decide_table(Threshold("promises", above=0.96), EvidenceTable(written, f.check_kinds), f)
    assert repr(again) == repr(verdict)


def test_conclude_says_the_cap_cut_attempts(tmp_path):
    root = findings_util.make_project(tmp_path / "proj")
    series_id, records = findings_util.held_out(root, passed=lambda case, repeat: True)
    first = records[0]["case"]
    for record in records:
        if record["case"] == first:
            record.update(outcome="budget_cut", passed=None, error_code="budget_exceeded",
                          checks={"label": {"state": "skipped", "value": None, "reason": None}})
    conclusion = findings_util.concluded(root, series_id, records)
    assert conclusion.facts.budget_cut
    cut = sum(r["case"] == first for r in records)
    assert (f"{cut} of {len(records)} attempts were not measured ({cut} cut by the spend cap; 1 of "
            f"{len(records) // cut} cases had none measured) and count against the claim") in conclusion.verdict.text
