"""What a person sees when their own check raises: the check, the function, and its file:line."""
from __future__ import annotations

from .test_judges import project, records

CHECK = '''from pytest_aqven import EvalContext, NoParams, Verdict


def polite(value, context: EvalContext, params: NoParams) -> Verdict:
    words = value.reply.split()
    return Verdict(passed=words[5] != "rude")
'''


def test_an_exception_in_a_custom_check_names_its_file_and_line(pytester):
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(10)], {"polite": {
        "checks": [{"id": "polite", "kind": "binary", "run": "@root.experiments.polite.checks:polite"}],
        "question": {"kind": "look"}}})
    (pytester.path / "proj/experiments/polite/checks.py").write_text(CHECK)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs")
    result.stdout.fnmatch_lines(["SKIPPED * E_POLICY_RAISED: check polite: evaluator "
                                 "@root.experiments.polite.checks:polite raised IndexError: list index out of range "
                                 "at checks.py:6"])
    assert all(r["outcome"] == "infra_error" for r in records(pytester.path))
    assert "Traceback" not in result.stdout.str()


SCORE = '''import math

from pytest_aqven import EvalContext, NoParams, Verdict


def length(value, context: EvalContext, params: NoParams) -> Verdict:
    n = len(value.reply.split()) - 2      # the replies have two words: a 0/0 of the user's own
    return Verdict(passed=True, score=math.nan if n == 0 else 1 / n)
'''


def test_a_non_finite_check_value_is_the_check_s_infrastructure_error_at_its_line(pytester):
    """A NaN score never passes nor leaves its attempt out of the metric silently: the attempt is skipped
    with the check, its function and where it returned."""
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(10)], {"length": {
        "checks": [{"id": "length", "kind": "continuous", "run": "@root.experiments.length.checks:length"}],
        "question": {"kind": "threshold", "metric": "length", "above": 0.1}}})
    (pytester.path / "proj/experiments/length/checks.py").write_text(SCORE)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs")
    result.stdout.fnmatch_lines(["SKIPPED * CHECK_VALUE_INVALID: check length: evaluator "
                                 "@root.experiments.length.checks:length gave the score nan, not a finite number "
                                 "(at checks.py:8)"])
    assert {r["outcome"] for r in records(pytester.path)} == {"infra_error"}
    assert "invalid - No finding: " in result.stdout.str()
