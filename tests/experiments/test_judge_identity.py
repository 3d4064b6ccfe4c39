"""A judge is the one named: its inference resolves like a node's files (the experiment's folder, then the
subject flow's, then the project's flows; two at one level are an aqven check error), its finding records
agent, model and the sha256 of its prompt, and a verdict resting on it is at most a signal unless validated_by
names an experiment with a standing confirmed held-out finding of that very judge."""
from __future__ import annotations

import re

import yaml

from pytest_aqven.cli import main
from pytest_aqven.experiments.plan import file_hash

from .. import engine_projects as ep
from ..projects import write_files  # more files only: engine_projects.write rewrites its defaults
from .test_judges import project, records

GRADE = "flows/support/nodes/answer/grade"
QUESTION = {"kind": "threshold", "metric": "grade", "above": 0.5}


def judged(**extra) -> dict:
    return {"checks": [{"id": "grade", "kind": "continuous", "inference": "grade", "agent": "critic", **extra}],
            "question": QUESTION}


def calibration(root, planted_right: bool = True) -> None:
    """zz_calib (decided after `graded` in path order) measures the judge `grade` (agent critic) as an llm node
    on planted replies: the critic's score must match the planted one in more than half of the cases."""
    cases = [{"name": f"p_{i:02d}", "inputs": {"text": "hello", "reply": "bad reply" if i % 2 else "good reply"},
              "expected_output": {"score": (0.1 if i % 2 else 0.9) if planted_right else 0.5}} for i in range(30)]
    write_files(root, {
        "types/pair.yaml": ep.record("A reply to grade", text="Text", reply="Text"),
        "types/grading.yaml": ep.record("A grade", score="Float"),
        "flows/calib/flow.yaml": ep.flow(["grade"], {"score": "$grade.out.score"}, input="Pair", output="Grading"),
        "flows/calib/nodes/grade/grade.node.yaml": ep.node(
            "llm", agent="critic", inference="grade", in_=[{"name": "text", "from": "$input.text"},
                                                           {"name": "reply", "from": "$input.reply"}]),
        "datasets/planted.yaml": {"apiVersion": "aqven/v1", "kind": "Dataset", "flow": "calib", "cases": cases},
        "experiments/zz_calib/experiment.yaml": {
            "apiVersion": "aqven/v1", "kind": "Experiment", "description": "The critic scores planted replies right",
            "subject": {"flow": "calib"}, "cases": {"dataset": "planted"}, "variants": [{"id": "critic"}],
            "checks": [{"id": "matches", "kind": "binary", "use": "expected", "with": {"fields": ["score"]}}],
            "question": {"kind": "threshold", "metric": "matches", "above": 0.5}},
    })


def check(capsys, root) -> list[str]:
    capsys.readouterr()
    main(["check", str(root), "--static"])
    return capsys.readouterr().out.splitlines()


def test_the_experiment_s_own_judge_wins_and_another_experiment_s_is_never_used(pytester):
    cases = [(f"c_{i:02d}", "hello") for i in range(10)]
    look = {"question": {"kind": "look"}, "checks": judged()["checks"]}
    project(pytester.path, cases, {"alpha": look, "beta": look})
    root = pytester.path / "proj"
    # beta keeps its own judge in its folder (one more input); alpha must not read it, though it sorts first
    write_files(root, {"experiments/beta/grade.inference.yaml": ep.inference(
        {"text": "Text", "reply": "Text", "mood": "Text?"}, {"score": "Float", "rationale": "Text"}),
        "experiments/beta/grade.prompt.md": "Beta's own rubric.\n"})
    assert pytester.runpytest("proj", "-p", "no:cacheprovider").ret == 0
    inputs = {(r["experiment"], tuple(sorted(r["trace"]["judges"]["grade"]["nodes"][0]["input"])))
              for r in records(pytester.path)}
    assert inputs == {("alpha", ("reply", "text")), ("beta", ("mood", "reply", "text"))}
    from pytest_aqven.project.inferences import inference_path, judge_levels
    from pytest_aqven.project.loader import load_project
    p = load_project(root)
    assert p.rel(inference_path(p, "grade", judge_levels(p, p.experiments["alpha"]), strict=True)) == \
        f"{GRADE}.inference.yaml"
    assert p.rel(inference_path(p, "grade", judge_levels(p, p.experiments["beta"]), strict=True)) == \
        "experiments/beta/grade.inference.yaml"


def test_two_judge_inferences_at_one_level_are_an_aqven_check_error(pytester, capsys):
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(10)], {"graded": judged()})
    root = pytester.path / "proj"
    # a second file in the subject flow's folder, the first level that has one
    write_files(root, {"flows/support/shared/grade.inference.yaml": ep.inference(
        {"text": "Text", "reply": "Text"}, {"score": "Float"}), "flows/support/shared/grade.prompt.md": "other\n"})
    lines = check(capsys, root)
    assert ("experiments/graded/experiment.yaml:13:3: error E_JUDGE_AMBIGUOUS checks[0].inference: experiment "
            "graded: check grade: judge inference grade has 2 files at one level, flows/support/nodes/answer/"
            "grade.inference.yaml, flows/support/shared/grade.inference.yaml: which one is meant is not clear") in lines, lines
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    assert result.ret != 0 and "E_JUDGE_AMBIGUOUS" in result.stdout.str() and not records_exist(pytester)
    # the experiment's own folder is the first level: a copy there settles which one
    write_files(root, {"experiments/graded/grade.inference.yaml": ep.inference(
        {"text": "Text", "reply": "Text"}, {"score": "Float"}), "experiments/graded/grade.prompt.md": "mine\n"})
    assert not any("E_JUDGE_AMBIGUOUS" in line for line in check(capsys, root))


def records_exist(pytester) -> bool:
    return (pytester.path / "proj/.aqven/aqven.sqlite").exists() and bool(records(pytester.path))


def test_a_judge_validated_by_a_confirmed_finding_of_the_same_judge_decides(pytester, xdist):
    """The calibration is decided first in the session even though it sorts last, and the judge's verdict
    stands on it; the finding records which judge it was."""
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(30)], {"graded": judged(validated_by="zz_calib")})
    root = pytester.path / "proj"
    calibration(root)
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", *xdist)
    out = result.stdout.str()
    assert re.search(r"zz_calib \(holdout, \d+/\d+ attempts\): confirmed", out), out
    assert re.search(r"graded \(holdout, \d+/\d+ attempts\): confirmed - bot: grade is 0.900", out), out
    finding = yaml.safe_load(next((root / "experiments/graded/findings").glob("*.yaml")).read_text())
    assert finding["judges"] == [{"check": "grade", "inference": "grade", "agent": "critic", "model": "fake:critic-1",
                                  "inference_file": f"{GRADE}.inference.yaml",
                                  "prompt_sha256": file_hash(root / f"{GRADE}.prompt.md"), "validated_by": "zz_calib"}]
    calib = yaml.safe_load(next((root / "experiments/zz_calib/findings").glob("*.yaml")).read_text())
    assert calib["variants"][0]["llm_nodes"] == [{"node": "grade", "agent": "critic", "model": "fake:critic-1",
                                                  "inference": "grade",
                                                  "prompt_sha256": file_hash(root / f"{GRADE}.prompt.md")}]
    assert result.ret == 0
    # collection warned (no finding yet); the session's own calibration settled it: the summary no longer alarms
    assert "W_JUDGE_UNVALIDATED" not in result.stdout.str()


def test_a_calibration_refuted_in_the_same_session_leaves_the_judge_s_verdict_a_signal(pytester, xdist):
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(30)], {"graded": judged(validated_by="zz_calib")})
    calibration(pytester.path / "proj", planted_right=False)
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", *xdist)
    out = result.stdout.str()
    assert re.search(r"zz_calib \(holdout, \d+/\d+ attempts\): refuted", out), out
    assert ("signal - Signal only, judge grade is not validated: the latest held-out finding of zz_calib, its "
            "validated_by, is refuted: bot: grade is 0.900") in out
    assert "warning W_JUDGE_UNVALIDATED checks[0].validated_by: experiment graded" in out     # still true


def test_validated_by_without_a_finding_a_changed_prompt_or_a_stale_finding_is_a_signal_and_a_warning(
        pytester, capsys):
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(30)], {"graded": judged(validated_by="zz_calib")})
    root = pytester.path / "proj"
    calibration(root)
    warning = ("experiments/graded/experiment.yaml:15:3: warning W_JUDGE_UNVALIDATED checks[0].validated_by: "
               "experiment graded: check grade: judge grade (critic) is not validated: ")
    missing = [line for line in check(capsys, root) if line.startswith(warning)]
    assert missing == [warning + "zz_calib, its validated_by, has no held-out finding; a verdict resting on it is at "
                                 "most a signal"]
    # the calibration alone, then the judge's prompt changes: the finding measured another judge
    assert pytester.runpytest("proj", "--aqven-holdout", "-k", "zz_calib", "-p", "no:cacheprovider").ret == 0
    assert not [line for line in check(capsys, root) if line.startswith(warning)]
    prompt = root / f"{GRADE}.prompt.md"
    original = prompt.read_text()
    prompt.write_text(original + "Be strict.\n")
    other = [line for line in check(capsys, root) if line.startswith(warning)]
    assert other == [warning + "the held-out findings of zz_calib, its validated_by, measured another judge, not "
                               "agent critic (fake:critic-1) on inference grade with this prompt; a verdict resting "
                               "on it is at most a signal"]
    result = pytester.runpytest("proj", "--aqven-holdout", "-k", "graded", "-p", "no:cacheprovider")
    assert "signal - Signal only, judge grade is not validated: the held-out findings of zz_calib" in result.stdout.str()
    assert not [line for line in check(capsys, root) if " error " in line]   # its finding decides again, why and all
    # the same judge again, but the planted cases changed since the calibration: its finding is stale
    prompt.write_text(original)
    planted = root / "datasets/planted.yaml"
    planted.write_text(planted.read_text().replace("p_00", "p_renamed"))
    stale = [line for line in check(capsys, root) if line.startswith(warning)]
    assert stale == [warning + "the confirmed finding of zz_calib, its validated_by, is stale: its dataset changed "
                               "since; a verdict resting on it is at most a signal"]


def test_the_project_level_is_the_project_outside_experiments(tmp_path):
    """A subagent's inference may sit beside its agent; an inference in an experiment's folder is that
    experiment's alone (and findings and hidden folders are never searched)."""
    from pytest_aqven.project.inferences import find_inference

    inference = ep.inference({"q": "Text"}, {"a": "Text"})
    write_files(tmp_path, {"aqven.yaml": "package: x\n", "agents/resolver/policy.inference.yaml": inference,
                   "experiments/other/policy.inference.yaml": inference,
                   "experiments/other/findings/own.inference.yaml": inference,
                   ".cache/own.inference.yaml": inference, "experiments/mine/own.inference.yaml": inference})
    assert find_inference("policy", [tmp_path]) == [tmp_path / "agents/resolver/policy.inference.yaml"]
    assert find_inference("own", [tmp_path]) == []
    assert find_inference("own", [tmp_path / "experiments/mine", tmp_path]) == [
        tmp_path / "experiments/mine/own.inference.yaml"]


def test_findings_md_counts_the_looks_of_a_question_per_judge_and_names_the_judge_s_model(pytester, xdist, capsys):
    """A calibration refuted under a buggy judge prompt, then confirmed under the fixed one, on the same held-out
    cases: two judges, so two groups of one look each, never "1 of 2" of one question. A judged finding's scope
    names its judge's model beside the subject's."""
    project(pytester.path, [(f"c_{i:02d}", "hello") for i in range(30)], {"graded": judged(validated_by="zz_calib")})
    root = pytester.path / "proj"
    calibration(root, planted_right=False)
    prompt = root / f"{GRADE}.prompt.md"
    buggy = file_hash(prompt)
    assert pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", *xdist).ret != 0
    graded = yaml.safe_load(next((root / "experiments/graded/findings").glob("*.yaml")).read_text())
    critic = {"agent": "critic", "model": "fake:critic-1", "inference": "grade", "prompt_sha256": buggy}
    assert graded["scope"]["judges"] == [critic]
    # the prompt fixed (and the planted labels with it), the calibration looks at its held-out cases again
    prompt.write_text("Score the reply from 0 to 1. Read the reply first.\n")
    calibration(root)
    again = pytester.runpytest("proj", "--aqven-holdout", "--aqven-respend-holdout", "-k", "zz_calib",
                               "-p", "no:cacheprovider", *xdist)
    assert re.search(r"zz_calib \(holdout, \d+/\d+ attempts\): confirmed", again.stdout.str()), again.stdout.str()
    looks = {f["state"]: f for f in (yaml.safe_load(p.read_text())
                                     for p in (root / "experiments/zz_calib/findings").glob("*.yaml"))}
    assert looks["refuted"]["scope"]["judges"] == [critic]
    assert looks["confirmed"]["scope"]["judges"] == [{**critic, "prompt_sha256": file_hash(prompt)}]
    assert looks["refuted"]["scope"]["holdout_looks"] == looks["confirmed"]["scope"]["holdout_looks"] == 1
    md = (root / "FINDINGS.md").read_text()
    calib = [line for line in md.splitlines() if "`zz_calib`" in line]
    assert len(calib) == 2 and all("looks of this judge; 1 look of another judge counted apart." in l
                                   for l in calib), md
    assert {re.search(r"Confirmed in (\d of \d) holdout looks", l).group(1) for l in calib} == {"0 of 1", "1 of 1"}
    assert all(re.search(r"Scope: holdout, \d+ × 1, fake:critic-1, judge fake:critic-1, ", l) for l in calib), calib
    (line,) = [line for line in md.splitlines() if "`graded`" in line]
    assert re.search(r"Scope: holdout, \d+ × 1, fake:bot-1, judge fake:critic-1, \d{4}-\d\d-\d\d\. \[finding\]", line)
    assert not [line for line in check(capsys, root) if "W_FINDINGS_STALE" in line or "E_FINDING_TAMPERED" in line]
