"""Judge checks: a model scores every attempt through the engine's llm node, its cost kept apart."""
from __future__ import annotations

import json
import sqlite3

import pytest
import yaml

from .. import engine_projects as ep

PROVIDER = '''
import json
from pytest_aqven import ModelRequest, ModelResponse


def complete(request: ModelRequest) -> ModelResponse:
    """The replier spoils a case whose text says 'bad'; the judge `grade` sees the reply and scores it."""
    user = next(m.text for m in request.messages if m.role == "user")     # the first: repairs come later
    if request.node == "answer":
        reply = "bad reply" if "bad" in user else "good reply"
        return ModelResponse(text=json.dumps({"reply": reply}), tokens_in=20, tokens_out=5, cost_usd=0.0002,
                             latency_ms=40.0)
    if request.node == "grade5":   # an ordinal judge on 1..5: 4 for a spoilt reply, else 5
        return ModelResponse(text=json.dumps({"score": 4 if "bad reply" in user else 5}), cost_usd=0.001)
    if "no judge" in user:
        return ModelResponse(text="{}", cost_usd=0.001)
    if "judge down" in user:
        raise ConnectionError("the judge's endpoint refused the connection")
    bad = "bad reply" in user
    return ModelResponse(text=json.dumps({"score": 0.1 if bad else 0.9, "rationale": "it says bad" if bad else "fine"}),
                         tokens_in=30, tokens_out=8, cost_usd=0.001, latency_ms=60.0)
'''


def project(tmp, cases: list[tuple[str, str]], experiments: dict[str, dict]) -> None:
    files = {
        "provider.py": PROVIDER,
        "agents/bot.yaml": ep.agent("fake:bot-1"),
        "agents/critic.yaml": ep.agent("fake:critic-1"),
        "types/reply.yaml": ep.record("A reply", reply="Text"),
        "flows/support/flow.yaml": ep.flow(["answer"], {"reply": "$answer.out.reply"}, output="Reply"),
        "flows/support/nodes/answer/answer.node.yaml": ep.node(
            "llm", agent="bot", in_=[{"name": "text", "from": "$input.text"}]),
        "flows/support/nodes/answer/answer.inference.yaml": ep.inference({"text": "Text"}, {"reply": "Text"}),
        "flows/support/nodes/answer/answer.prompt.md": "Answer the customer.\n",
        "flows/support/nodes/answer/grade.inference.yaml": ep.inference(
            {"text": "Text", "reply": "Text"}, {"score": "Float", "rationale": "Text"}),
        "flows/support/nodes/answer/grade.prompt.md": "Score the reply from 0 to 1.\n",
        "flows/support/nodes/answer/grade5.inference.yaml": {
            **ep.inference({"text": "Text", "reply": "Text"}, {}),
            "out": [{"name": "score", "type": "Int", "minimum": 1, "maximum": 5}]},
        "flows/support/nodes/answer/grade5.prompt.md": "Score the reply from 1 to 5.\n",
        "datasets/asks.yaml": {"apiVersion": "aqven/v1", "kind": "Dataset", "flow": "support",
                               "cases": [{"name": n, "inputs": {"text": t}} for n, t in cases]},
    }
    for exp_id, body in experiments.items():
        files[f"experiments/{exp_id}/experiment.yaml"] = {
            "apiVersion": "aqven/v1", "kind": "Experiment", "description": "Replies score above 0.3 in most attempts",
            "subject": {"flow": "support"}, "cases": {"dataset": "asks"}, "variants": [{"id": "bot"}], **body}
    ep.write(tmp / "proj", files, package="judgeproj")


def judge(kind: str = "binary", **extra) -> dict:
    return {"id": "grade", "kind": kind, "inference": "grade", "agent": "critic", **extra}


def records(tmp) -> list[dict]:
    db = sqlite3.connect(tmp / "proj/.aqven/aqven.sqlite")
    return [json.loads(r) for (r,) in db.execute("SELECT record FROM aqven_series_attempts ORDER BY rowid")]


def test_a_binary_judge_scores_every_attempt_and_its_cost_is_spend_not_cost(pytester, xdist):
    cases = [(f"ok_{i:02d}", "hello") for i in range(8)] + [(f"bad_{i}", "bad news") for i in range(6)]
    project(pytester.path, cases, {"look_replies": {"checks": [judge()], "question": {"kind": "look"}}})
    result = pytester.runpytest("proj", "-rx", "-p", "no:cacheprovider", *xdist)
    dev = [r for r in records(pytester.path)]
    bad = [r for r in dev if r["case"].startswith("bad")]
    assert bad, "the split put no bad case on the working half"
    for r in dev:
        assert r["cost_usd"] == pytest.approx(0.0002) and r["check_cost_usd"] == pytest.approx(0.001)
        grade = r["checks"]["grade"]
        judge_trace = r["trace"]["judges"]["grade"]
        assert judge_trace["nodes"][0]["calls"][0]["model"] == "fake:critic-1"
        assert judge_trace["nodes"][0]["input"]["reply"] in ("good reply", "bad reply")
        if r["case"].startswith("bad"):
            assert grade == {"state": "failed", "value": 0.0, "reason": "it says bad"} and r["passed"] is False
        else:
            assert grade["state"] == "passed" and r["passed"] is True
    result.stdout.fnmatch_lines([f"XFAIL *::bot::{bad[0]['case']}::1 - grade: it says bad"])


def test_an_unvalidated_deciding_judge_gives_a_signal_that_says_why(pytester, xdist):
    cases = [(f"c_{i:02d}", "hello") for i in range(24)]
    question = {"kind": "threshold", "metric": "grade", "above": 0.5}
    project(pytester.path, cases, {
        "graded": {"checks": [judge("continuous")], "question": question},
        "graded_validated": {"checks": [judge("continuous", validated_by="graded")], "question": question}})
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", *xdist)
    lines = {l.split(" ")[0]: l for l in result.outlines if l.startswith("graded")}
    assert "signal - Signal only, judge grade has no validated_by" in lines["graded"], lines
    # validated_by is not a name only: the experiment it names has no confirmed finding
    # (tests/experiments/test_judge_identity.py)
    assert ("signal - Signal only, judge grade is not validated: the latest held-out finding of graded, its "
            "validated_by, is signal: bot: grade is 0.90") in lines["graded_validated"], lines
    finding = yaml.safe_load(next((pytester.path / "proj/experiments/graded_validated/findings").glob("*.yaml")).read_text())
    assert [(j["check"], j["agent"], j["model"], j["validated_by"]) for j in finding["judges"]] == [
        ("grade", "critic", "fake:critic-1", "graded")]
    assert result.ret == 0


def test_an_ordinal_judge_is_decided_on_its_declared_scale(pytester, xdist):
    """The judge's output declares its score an Int from 1 to 5: the finding records that range, the
    robust interval is hulled with the betting interval on it, its bounds never leave it, and
    `aqven check` decides the finding again from the recorded range."""
    from pytest_aqven.findings.verify import recompute

    cases = [(f"ok_{i:02d}", "hello") for i in range(20)] + [(f"bad_{i}", "bad news") for i in range(4)]
    grade5 = {"id": "grade5", "kind": "ordinal", "inference": "grade5", "agent": "critic"}
    project(pytester.path, cases, {"graded5": {"checks": [grade5], "question": {
        "kind": "threshold", "metric": "grade5", "above": 3.5}}})
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", *xdist)
    finding = yaml.safe_load(next((pytester.path / "proj/experiments/graded5/findings").glob("*.yaml")).read_text())
    assert finding["method"]["check_scales"] == {"grade5": [1.0, 5.0]}
    estimate = finding["cells"][0]["estimate"]
    assert estimate["family"] == "robust"     # on an undeclared 1..5 scale: the model interval alone
    assert 1.0 <= estimate["low"] <= estimate["high"] <= 5.0
    assert recompute(finding).text == finding["statement"]
    assert result.ret == 0


def test_a_judge_that_gives_no_grade_is_the_checks_infrastructure_error_never_a_failure(pytester):
    """Its answer never fit (the judge's own model failure): CHECK_VALUE_INVALID; the attempt is not counted."""
    project(pytester.path, [(f"c_{i:02d}", "no judge") for i in range(10)],
            {"look_replies": {"checks": [judge("continuous")], "question": {"kind": "look"}}})
    pytester.runpytest("proj", "-p", "no:cacheprovider")
    assert records(pytester.path)
    for r in records(pytester.path):
        assert r["outcome"] == "infra_error" and r["passed"] is None and r["error_code"] == "CHECK_VALUE_INVALID"
        assert r["error_message"].startswith("check grade: judge grade (critic) failed (MODEL_RETRIES_EXHAUSTED): "
                                             "node grade: ")
        assert "score: Field required" in r["error_message"]
        assert len(r["trace"]["judges"]["grade"]["nodes"][0]["calls"]) == 2     # the engine's repair turn ran


def test_a_binary_judge_whose_call_fails_is_the_checks_infrastructure_error_not_a_failed_answer(pytester, xdist):
    """The judge's plumbing (its provider failed the call) never grades the subject: the attempt is skipped with
    the judge's own error code, and a threshold on it is invalid, not refuted."""
    project(pytester.path, [(f"c_{i:02d}", "judge down") for i in range(12)],
            {"graded": {"checks": [judge()], "question": {"kind": "threshold", "metric": "grade", "above": 0.5}}})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED     # invalid fails a working run too
    outcomes = result.parseoutcomes()
    assert "xfailed" not in outcomes and outcomes["skipped"] == len(records(pytester.path))
    for r in records(pytester.path):
        assert (r["outcome"], r["error_code"], r["passed"]) == ("infra_error", "provider_error", None)
        assert r["error_message"].startswith("check grade: judge grade (critic) failed (provider_error): ")
    result.stdout.fnmatch_lines(["graded (dev, *): invalid - *"])


def test_a_range_judge_binds_inputs_from_node_outputs(pytester):
    """A range from..to: the judge reads the outputs of the nodes above it from the case's node_outputs."""
    files_cases = [(f"c_{i:02d}", "hello") for i in range(10)]
    project(pytester.path, files_cases, {})
    root = pytester.path / "proj"
    ep.write(root, {
        "provider.py": PROVIDER,
        "flows/support/flow.yaml": ep.flow(["draft", "answer"], {"reply": "$answer.out.reply"}, output="Reply"),
        "flows/support/nodes/draft/draft.node.yaml": ep.node(
            "code", run="draft", in_=[{"name": "text", "from": "$input.text"}], out=[{"name": "note", "type": "Text"}]),
        "flows/support/nodes/draft/draft.py": "def draft(text):\n    return {'note': text.upper()}\n",
        "flows/support/nodes/answer/answer.node.yaml": ep.node(
            "llm", agent="bot", in_=[{"name": "text", "from": "$draft.out.note"}]),
        "flows/support/nodes/answer/grade.inference.yaml": ep.inference(
            {"note": "Text", "reply": "Text"}, {"score": "Float", "rationale": "Text"}),
        "datasets/asks.yaml": {"apiVersion": "aqven/v1", "kind": "Dataset", "flow": "support", "cases": [
            {"name": n, "inputs": {"text": t}, "node_outputs": {"draft": {"note": "GIVEN NOTE"}}}
            for n, t in files_cases]},
        "experiments/ranged/experiment.yaml": {
            "apiVersion": "aqven/v1", "kind": "Experiment", "description": "A range judged",
            "subject": {"flow": "support", "from": "answer", "to": "answer"}, "cases": {"dataset": "asks"},
            "variants": [{"id": "bot"}], "checks": [judge("continuous")], "question": {"kind": "look"}},
    }, package="judgeproj")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    assert "E_" not in result.stdout.str(), result.stdout.str()
    assert records(pytester.path)
    for r in records(pytester.path):
        bound = r["trace"]["judges"]["grade"]["nodes"][0]["input"]
        assert bound == {"note": "GIVEN NOTE", "reply": "good reply"}
        assert r["checks"]["grade"]["value"] == 0.9


# the provider above, counting its calls by node (one line each in calls.log beside the project)
COUNTING = PROVIDER + '''
from pathlib import Path

_answer = complete


def complete(request):
    with open(Path(__file__).parent.parent / "calls.log", "a") as log:
        log.write(request.node + "\\n")
    return _answer(request)
'''


def test_a_judge_input_nothing_binds_is_the_check_s_infrastructure_error_and_no_judge_call(pytester, xdist):
    """A judge whose inference needs `tone`, which no document carries: the judge is never called (no model call
    spent), no attempt is a counted failure, and the verdict is invalid on the infrastructure errors."""
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(10)],
            {"graded": {"checks": [judge()], "question": {"kind": "threshold", "metric": "grade", "above": 0.5}}})
    ep.write(pytester.path / "proj", {
        "provider.py": COUNTING,
        "flows/support/nodes/answer/grade.inference.yaml": ep.inference(
            {"reply": "Text", "tone": "Text", "hint": "Text?"}, {"score": "Float", "rationale": "Text"}),
    }, package="judgeproj")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs", *xdist)
    calls = (pytester.path / "calls.log").read_text().split()
    assert calls and set(calls) == {"answer"}, calls      # the subject ran, the judge never
    dev = records(pytester.path)
    assert dev and all(r["outcome"] == "infra_error" and r["passed"] is None for r in dev)
    assert {r["error_code"] for r in dev} == {"CHECK_INPUT_MISSING"}
    assert all("judges" not in r["trace"] and r["check_cost_usd"] == 0 for r in dev)
    result.stdout.fnmatch_lines([
        f"graded (dev, *): invalid - No finding: {len(dev)} of {len(dev)} attempts hit infrastructure errors (*).",
        "*every attempt of variant bot hit CHECK_INPUT_MISSING*",
        "SKIPPED * CHECK_INPUT_MISSING: check grade: judge grade (critic) needs input tone (Text), which is missing: "
        "looked for in $in, $answer.out, $out; the judge was not called"])
    assert "xfail" not in result.stdout.str()


def test_a_judge_input_that_is_null_names_the_document_that_gave_it(pytester):
    cases = [(f"c_{i:02d}", "hello") for i in range(10)]
    project(pytester.path, cases, {"looked": {"checks": [judge()], "question": {"kind": "look"}}})
    ep.write(pytester.path / "proj", {
        "provider.py": COUNTING,
        "types/ask.yaml": ep.record("A question", text="Text", mood="Text?"),
        "datasets/asks.yaml": {"apiVersion": "aqven/v1", "kind": "Dataset", "flow": "support",
                               "cases": [{"name": n, "inputs": {"text": t, "mood": None}} for n, t in cases]},
        "flows/support/nodes/answer/grade.inference.yaml": ep.inference(
            {"reply": "Text", "mood": "Text"}, {"score": "Float"}),
    }, package="judgeproj")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs")
    result.stdout.fnmatch_lines(["SKIPPED * CHECK_INPUT_MISSING: check grade: judge grade (critic) needs input mood "
                                 "(Text), which is null in $in; the judge was not called"])
    assert set((pytester.path / "calls.log").read_text().split()) == {"answer"}


@pytest.mark.parametrize("decl, scale", [
    ({"type": "Score"}, (0.0, 1.0)),
    ({"type": "Int", "minimum": 1, "maximum": 5}, (1.0, 5.0)),
    ({"type": "Int", "enum": [1, 2, 3, 4, 5]}, (1.0, 5.0)),
    ({"type": "Score?"}, (0.0, 1.0)),
    ({"type": "Float", "minimum": 0, "exclusiveMaximum": 10}, (0.0, 10.0)),
    ({"type": "Float"}, None),
    ({"type": "Float", "minimum": 0}, None),                 # open above: no range
])
def test_the_range_a_judges_score_declares(decl, scale):
    from pytest_aqven.experiments.checks import _range
    from pytest_aqven.project.specs import FieldDecl
    from pytest_aqven.project.types import Registry

    model = Registry({}).record("GradeOut", [FieldDecl.model_validate({"name": "score", **decl})])
    assert _range(model.model_json_schema()["properties"]["score"]) == scale
