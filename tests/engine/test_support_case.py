"""A flow shaped like the seeds' support_case, run whole and as a range, and through run_attempt."""
import asyncio

import pytest

from pytest_aqven.codes import outcome_of

from .. import support_case
from ..engine_projects import load, run

APPROVAL = {"approve": {"approved": True, "note": "ok"}}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return load(support_case.make(tmp_path_factory.mktemp("support"), "supportproj"))


def by(result, node_id):
    return next(n for n in result.nodes if n.node == node_id)


def test_the_whole_flow(project):
    result = run(project, "support_case", {"text": "my lamp is broken, refuse", "order_id": "A12"},
                 node_outputs=APPROVAL)
    assert result.error is None, result.error
    assert result.output == {"reply": "gpt draft (revised) (revised)", "resolution": "replace", "score": 0.9,
                             "iterations": 2, "approved": True, "winner": "gpt draft", "verdict": "panel",
                             "status": "shipped"}
    # drafts: gemini refused, the quorum of two went on without it
    assert by(result, "drafts__gemini").status == "failed" and by(result, "drafts__gemini").error_code == "refusal"
    assert by(result, "drafts").output == {"candidates": ["gpt draft", "mistral draft"]}
    # the judge panel runs inside the call, its judges in parallel
    judges = [n for n in result.nodes if n.parent == "panel__judges"]
    assert sorted(n.branch for n in judges) == ["deepseek", "llama", "qwen"]
    assert by(result, "panel__settle").detail["case"] == "true"
    # the polish loop: two passes, stopped by the threshold
    assert [n.iteration for n in result.nodes if n.node == "polish__critique"] == [0, 1]
    assert by(result, "polish").detail["stop_reason"] == "policy"
    assert by(result, "route").detail["case"] == "defect"
    assert result.models["drafts__gpt"] == "fake:gpt-1"
    # latency: the models' reported 50 ms per call; the slowest branch of a parallel, the sum of a loop
    assert by(result, "drafts").latency_ms == 50.0 and by(result, "polish").latency_ms == 200.0
    assert by(result, "panel__judges").latency_ms == 50.0
    assert by(result, "panel").latency_ms == pytest.approx(sum(by(result, f"panel__{n}").latency_ms
                                                               for n in ("judges", "aggregate", "settle", "finish")))
    lines = support_case.trace_lines(result)
    assert len(lines) == len(result.nodes) and lines[0].startswith("prepare [code] ok")


def test_a_split_panel_goes_to_the_tie_break(project):
    result = run(project, "support_case", {"text": "split decision on a question", "order_id": "B1"},
                 node_outputs=APPROVAL)
    assert result.error is None, result.error
    assert result.output["verdict"] == "tie_break" and result.output["winner"] == "mistral draft"
    assert result.output["resolution"] == "advice" and result.output["status"] == "unknown"
    assert by(result, "panel__settle__tie_break").model == "fake:gpt-1"


def test_without_the_approval_the_attempt_is_human_timed_out(project):
    result = run(project, "support_case", {"text": "broken", "order_id": "A1"})
    assert result.error.code == "HUMAN_TIMED_OUT" and result.error.node == "approve"
    assert outcome_of(result.error.code) == "infra_error"


def test_a_range_runs_only_its_nodes_from_the_fixtures(project):
    fixtures = {"prepare": {"summary": "broken lamp", "kind": "defect"}, "panel": {"winner": "w", "verdict": "panel"}}
    result = run(project, "support_case", {"text": "ignored", "order_id": "A1"}, start="polish", end="route",
                 node_outputs=fixtures)
    assert result.error is None, result.error
    assert [n.node for n in result.nodes if n.parent is None] == ["polish", "route"]
    assert result.output == {"resolution": "replace"}
    assert by(result, "polish").output["reply"] == "w (revised) (revised)"


def test_a_range_with_a_missing_fixture_names_the_reference(project):
    result = run(project, "support_case", {"text": "x", "order_id": "A1"}, start="polish", end="polish",
                 node_outputs={"prepare": {"summary": "s", "kind": "question"}})
    assert result.error.code == "INPUT_INVALID"
    assert "$panel.out.winner" in result.error.message and result.error.node == "polish"


def test_through_run_attempt_the_record_has_the_trace(project):
    from pytest_aqven.engine.runner import Assembly
    from pytest_aqven.experiments.attempt import run_attempt
    from pytest_aqven.experiments.plan import SeriesPlan
    from pytest_aqven.project.specs import CaseSpec
    from pytest_aqven.providers import registry

    providers = {s.id: registry.build(s, package=project.package, root=project.root) for s in project.spec.providers}
    plan = SeriesPlan(None, "dev", [], 1, 1, {"v": Assembly(project.flows["support_case"])})
    case = CaseSpec(name="c1", inputs={"text": "broken", "order_id": "A1"},
                    metadata={"human_answers": {"approve": {"approved": False}}})

    class Experiment:
        id = "support_look"

    plan.experiment = Experiment()
    record = asyncio.run(run_attempt(project, plan, [], providers, "v", case, 1, "s1"))
    assert record.outcome == "ok" and record.trace["output"]["approved"] is False
    assert record.schema_valid_first_try is True and record.unpriced_calls == 0
    assert record.tokens_in == 100 * len([n for n in record.trace["nodes"] if n["calls"]])
