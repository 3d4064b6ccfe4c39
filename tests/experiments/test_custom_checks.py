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


SEVERAL = '''import math

from pytest_aqven import EvalContext, NoParams, Verdict


def length(value, context: EvalContext, params: NoParams) -> Verdict:
    words = value.reply.split()
    if not words:
        return Verdict(passed=False, score=0.0)
    ratio = math.nan if len(words) == 2 else 1.0      # the replies have two words: the user's own NaN
    return Verdict(passed=True,
                   score=ratio)
'''


def test_a_non_finite_check_value_names_the_return_that_made_it_among_several(pytester, xdist):
    """A check with several returns: the line of the one whose Verdict carried the NaN, not the `def`."""
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(10)], {"length": {
        "checks": [{"id": "length", "kind": "continuous", "run": "@root.experiments.length.checks:length"}],
        "question": {"kind": "threshold", "metric": "length", "above": 0.1}}})
    (pytester.path / "proj/experiments/length/checks.py").write_text(SEVERAL)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs", *xdist)
    result.stdout.fnmatch_lines(["SKIPPED * CHECK_VALUE_INVALID: check length: evaluator "
                                 "@root.experiments.length.checks:length gave the score nan, not a finite number "
                                 "(at checks.py:11)"])


TYPED = '''import math

from pydantic import BaseModel

from pytest_aqven import EvalContext, NoParams, Verdict
from judgeproj.types import Ask, Reply


def same_reply(value: Reply, context: EvalContext[Ask, Reply], params: NoParams) -> Verdict:
    return Verdict(passed=value.reply == context.expected_output.reply)


def short(value: Reply, context: EvalContext[Ask, Reply], params: NoParams) -> Verdict:
    return Verdict(passed=len(value.reply) < 40)       # types the context as AQVEN does, never reads expected_output


def maybe_same(value: Reply, context: EvalContext[Ask, Reply | None], params: NoParams) -> Verdict:
    return Verdict(passed=context.expected_output is not None and value.reply == context.expected_output.reply)


def unsure(value: Reply, context: EvalContext[Ask, Reply], params: NoParams) -> Verdict:
    return Verdict.model_construct(passed=math.nan, score=None, reason=None)     # bool(nan) is True


def any_model(value: BaseModel, context: EvalContext[BaseModel, BaseModel], params: NoParams) -> Verdict:
    """Typed as AQVEN's showcase types reply_keeps_resolution: any model."""
    reply = value.model_dump(mode="json")["reply"]
    return Verdict(passed=reply == "good reply" and context.inputs.text == "hello")
'''


def _typed_checks(pytester, *check_ids: str) -> None:
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(10)], {"typed": {
        "checks": [{"id": c, "kind": "binary", "run": f"@root.experiments.typed.checks:{c}"} for c in check_ids],
        "question": {"kind": "look"}}})
    (pytester.path / "proj/experiments/typed/checks.py").write_text(TYPED)


def test_a_typed_check_parameter_that_gets_null_is_the_check_s_infrastructure_error(pytester, xdist):
    """The cases have no expected_output: a check typed EvalContext[Ask, Reply] that reads it never scores a
    blank, the attempt is skipped with the parameter, where it was looked for and the line that read it."""
    _typed_checks(pytester, "same_reply")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs", *xdist)
    result.stdout.fnmatch_lines(["SKIPPED * CHECK_INPUT_MISSING: check same_reply: evaluator "
                                 "@root.experiments.typed.checks:same_reply types context.expected_output as Reply, "
                                 "which is not optional, but the case's expected_output is null or missing "
                                 "(read at checks.py:10)"])
    found = records(pytester.path)
    assert found and {(r["outcome"], r["error_code"], r["passed"]) for r in found} == {
        ("infra_error", "CHECK_INPUT_MISSING", None)}


def test_a_typed_check_that_never_reads_a_null_slot_or_admits_null_scores(pytester):
    """AQVEN's idiom types every context EvalContext[In, Out]: a check that never reads the null slot, and one
    typed `Reply | None`, score as before."""
    _typed_checks(pytester, "short", "maybe_same")
    pytester.runpytest("proj", "-p", "no:cacheprovider")
    found = records(pytester.path)
    assert found and all(r["outcome"] == "ok" for r in found)
    assert {(r["checks"]["short"]["state"], r["checks"]["maybe_same"]["state"]) for r in found} == {
        ("passed", "failed")}


def test_a_check_whose_passed_is_nan_is_the_check_s_infrastructure_error(pytester, xdist):
    """bool(nan) is True: such a check would pass every attempt."""
    _typed_checks(pytester, "unsure")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs", *xdist)
    result.stdout.fnmatch_lines(["SKIPPED * CHECK_VALUE_INVALID: check unsure: evaluator "
                                 "@root.experiments.typed.checks:unsure gave passed nan, not a boolean"])
    found = records(pytester.path)
    assert found and {(r["outcome"], r["passed"]) for r in found} == {("infra_error", None)}


def test_a_check_typed_with_the_bare_base_model_gets_the_records_as_models(pytester, xdist):
    """`value: BaseModel, context: EvalContext[BaseModel, BaseModel]` (AQVEN's showcase) means any model: the
    check reads the output and the inputs as models, never a pydantic error out of the plugin."""
    _typed_checks(pytester, "any_model")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    found = records(pytester.path)
    assert found and {(r["outcome"], r["checks"]["any_model"]["state"]) for r in found} == {("ok", "passed")}
    assert "Traceback" not in result.stdout.str() and "PydanticUserError" not in result.stdout.str()
