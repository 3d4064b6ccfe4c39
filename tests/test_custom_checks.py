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
