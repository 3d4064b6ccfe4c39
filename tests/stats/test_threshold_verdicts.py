"""Samples, threshold cells, rule order and exact sentences for threshold questions."""

import pytest

from pytest_aqven.stats import Attempt, CheckValue, Look, Threshold, decide
from pytest_aqven.stats.edges import interval_verdict

from .helpers import binary_attempts, facts

ALL_PASS_12x20 = [20] * 12


def test_interval_verdict_truth_table_strict_edges():
    assert interval_verdict(0.81, 0.9, 0.8) == "pass"
    assert interval_verdict(0.8, 0.9, 0.8) == "unclear"  # a tie is never decided
    assert interval_verdict(0.6, 0.79, 0.8) == "fail"
    assert interval_verdict(0.6, 0.8, 0.8) == "unclear"
    assert interval_verdict(0.7, 0.9, 0.8) == "unclear"
    assert interval_verdict(None, None, 0.8) == "unclear"


def test_all_pass_12x20_cannot_confirm_above_095_model_family():
    verdict = decide(Threshold("promises", above=0.95, margin=0.0),
                     binary_attempts("gpt", ALL_PASS_12x20, 20), facts(family="model"))
    assert verdict.state == "inconclusive"
    assert verdict.reason == "below_mde"
    assert verdict.text == (
        "gpt: promises is 1.00 (95% CI 0.74 to 1.00) against above 0.95 with margin 0: too wide to decide."
    )
    cell = verdict.cells[0]
    assert cell.estimate.method == "M1" and cell.estimate.family == "model"
    assert cell.estimate.low == pytest.approx(0.7353515, abs=1e-7)


def test_robust_family_is_the_hull():
    cases = [20, 19] + [20] * 10
    verdict = decide(Threshold("promises", above=0.5), binary_attempts("gpt", cases, 20), facts())
    est = verdict.cells[0].estimate
    assert est.family == "robust"
    assert est.low_from == "betting" and est.low == est.betting_low < est.model_low
    assert verdict.state == "confirmed"
    assert verdict.cells[0].decided_by == "betting"


def test_all_pass_decides_by_the_exact_bound():
    """Every case passes: the lower bound is 0.025^(1/C) (0.7354 at C = 12), not the betting interval's
    0.7253; every case fails: the upper bound is 1 - 0.025^(1/C)."""
    verdict = decide(Threshold("promises", above=0.5), binary_attempts("gpt", ALL_PASS_12x20, 20), facts())
    est = verdict.cells[0].estimate
    assert est.low == pytest.approx(0.025 ** (1 / 12)) and est.low_from == "model"
    assert verdict.state == "confirmed"
    assert verdict.text == (
        "gpt: promises is 1.00 (95% CI 0.74 to 1.00) against above 0.5 with margin 0: "
        "clears the bound by more than the margin."
    )
    est = decide(Threshold("promises", below=0.5), binary_attempts("gpt", [0] * 12, 20), facts()).cells[0].estimate
    assert est.high == pytest.approx(1 - 0.025 ** (1 / 12)) and est.high_from == "model"


def test_refuted_below_edge_and_every_variant_must_clear():
    good = binary_attempts("gpt", [20] * 40, 20)
    bad = binary_attempts("mistral", [10] * 40, 20)
    verdict = decide(Threshold("promises", above=0.7, margin=0.05), good + bad, facts(("gpt", "mistral")))
    assert [c.verdict for c in verdict.cells] == ["pass", "fail"]
    assert verdict.state == "refuted" and verdict.reason is None
    assert verdict.text == (
        "gpt: promises is 1.00 (95% CI 0.91 to 1.00) against above 0.7 with margin 0.05: "
        "clears the bound by more than the margin; "
        "mistral: promises is 0.50 (95% CI 0.45 to 0.55) against above 0.7 with margin 0.05: "
        "stays within the margin of the bound or on its wrong side."
    )


def test_variant_selects_one_cell():
    data = binary_attempts("gpt", [20] * 40, 20) + binary_attempts("mistral", [10] * 40, 20)
    verdict = decide(Threshold("promises", above=0.7, variant="gpt"), data, facts(("gpt", "mistral")))
    assert [c.variant for c in verdict.cells] == ["gpt"] and verdict.state == "confirmed"


def test_below_threshold_mirrors():
    data = binary_attempts("gpt", [0] * 40 + [1] * 10, 10)
    verdict = decide(Threshold("promises", below=0.2, margin=0.01), data, facts())
    assert verdict.state == "confirmed"
    cell = verdict.cells[0]
    assert cell.bound == "below" and cell.edge == pytest.approx(0.19)
    assert verdict.text.startswith("gpt: promises is 0.02 (95% CI 0.01 to 0.09) ")
    assert verdict.text.endswith("against below 0.2 with margin 0.01: clears the bound by more than the margin.")


def test_infra_errors_are_never_failures():
    data = binary_attempts("gpt", [20] * 40, 20)
    data.append(Attempt("gpt", "case000", 21, "infra_error", None, {"promises": CheckValue("skipped", None)}))
    verdict = decide(Threshold("promises", above=0.5), data, facts())
    assert verdict.metrics["gpt"]["promises"].value == 1.0
    assert verdict.metrics["gpt"]["success_rate"].value == 1.0
    assert verdict.metrics["gpt"]["success_rate"].attempts == 800
    assert verdict.metrics["gpt"]["infra_error_rate"].value == pytest.approx(1 / 40 / 21 * 1 + 0, abs=0.05)
    assert verdict.state == "confirmed"


def test_rule_order_sentences():
    data = binary_attempts("gpt", [20] * 12, 20)
    q = Threshold("promises", above=0.5)
    assert decide(Look(), data, facts()).state is None
    v = decide(q, data, facts(cancelled=True, budget_cut=True, total_attempts=480))
    assert (v.state, v.reason, v.text) == ("invalid", "cancelled", "No finding: cancelled after 240 of 480 attempts.")
    v = decide(q, data, facts(budget_cut=True, inputs_changed=True, total_attempts=480))
    assert (v.reason, v.text) == ("budget_cut", "No finding: the spend cap stopped the series after 240 of 480 attempts.")
    v = decide(q, data, facts(inputs_changed=True))
    assert v.reason == "inputs_changed"
    assert v.text == ("No finding: inputs changed during the series "
                      "(the working tree no longer matches the snapshot taken at the start).")
    named = decide(q, data, facts(inputs_changed=True, changed_inputs="datasets/reviews.yaml"))
    assert named.text == ("No finding: inputs changed during the series: datasets/reviews.yaml "
                          "(the working tree no longer matches the snapshot taken at the start).")
    errors = [Attempt("gpt", f"case{i:03d}", 99, "infra_error", None, {}) for i in range(13)]
    v = decide(q, data + errors, facts(split="dev"))
    assert (v.state, v.reason, v.text) == ("invalid", "infra_errors", "No finding: 13 of 253 attempts hit infrastructure "
                                           "errors (1 of 13 cases had none measured).")
    again = Attempt("gpt", "case000", 98, "infra_error", None, {})
    v = decide(q, data + errors[:12] + [again], facts())   # every case measured: the sentence of errors alone
    assert (v.state, v.reason, v.text) == ("invalid", "infra_errors", "No finding: 13 of 253 attempts hit infrastructure errors.")
    v = decide(q, data + errors[:12], facts())  # 12/252 = 4.8%: not more than 5%
    assert v.state == "confirmed"
    v = decide(Threshold("other", above=0.5), data, facts())
    assert (v.state, v.reason, v.text) == ("invalid", "no_data", "No finding: the primary metric has no data.")
    v = decide(q, data, facts(split="dev"))
    assert (v.state, v.reason) == ("signal", "dev_split")
    assert v.text == ("Signal on dev, not a finding: gpt: promises is 1.00 (95% CI 0.74 to 1.00) "
                      "against above 0.5 with margin 0: clears the bound by more than the margin.")
    v = decide(q, data, facts(unvalidated_judges=frozenset({"promises"})))
    assert (v.state, v.reason) == ("signal", "judge_not_validated")
    assert v.text.startswith("Signal only, judge promises has no validated_by (no experiment measured its errors")


def test_cancelled_attempts_are_not_settled_but_not_measured_either():
    data = binary_attempts("gpt", [20] * 12, 20)
    cancelled = [Attempt("gpt", "case000", 30 + i, "cancelled", None, {}) for i in range(50)]
    v = decide(Threshold("promises", above=0.5), data + cancelled[:5], facts())
    assert v.state == "confirmed" and v.metrics["gpt"]["infra_error_rate"].attempts == 240
    assert v.text.endswith("; 5 of 245 attempts were not measured (5 cancelled) and count against the claim.")
    v = decide(Threshold("promises", above=0.5), data + cancelled, facts())
    assert (v.state, v.reason, v.text) == ("invalid", "infra_errors",
                                           "No finding: 50 of 290 attempts were not measured (50 cancelled).")


def test_metrics_table_has_every_series_and_check_metric():
    verdict = decide(Threshold("promises", above=0.5), binary_attempts("gpt", [20] * 12, 20), facts())
    assert set(verdict.metrics["gpt"]) == {
        "success_rate", "cost_usd", "cost_of_pass", "latency_p50_ms", "latency_p95_ms",
        "schema_valid_first_try", "infra_error_rate", "promises",
    }
    assert verdict.metrics["gpt"]["cost_usd"].degenerate == "no_data"
