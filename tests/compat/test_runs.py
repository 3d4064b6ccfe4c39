"""The showcase-shaped project (tests/compat_project.py) runs as AQVEN runs it: user code receives AQVEN's
objects (a join typed `JoinState[Grade]` gets Grade models, an inference's check typed
`EvalContext[GradeIn, GradeOut]` gets models), a bare function name of an inference's checks lives beside
the inference file (also when a flow.py reuses the inference), a variant slot chosen by an input path picks
its text, and a join that fails because every branch's answer failed counts as the models' failure."""
from __future__ import annotations

import asyncio
import re

from pytest_aqven import codes
from pytest_aqven.engine.runner import Assembly, Runner
from pytest_aqven.experiments import attempt
from pytest_aqven.project.loader import load_project
from pytest_aqven.providers import registry

from ..check.test_compat import edit
from ..compat_project import write_project


def run_flow(project, flow, inputs, **assembly):
    providers = {s.id: registry.build(s, package=project.package, root=project.root) for s in project.spec.providers}
    return asyncio.run(Runner(project, providers).run(Assembly(flow, **assembly), inputs, {}, None))


def panel(project):
    return project.experiments["brake_panel"].flows["panel"]


def test_a_join_typed_with_a_model_receives_models_and_its_done_values_go_back_as_json(spoke):
    """agreeing(state: JoinState[Grade], ...) reads grade.verdict: each branch's output is a Grade."""
    project = load_project(spoke)
    result = run_flow(project, panel(project), {"summary": "A squeaky brake", "action": "fix"})
    assert result.error is None, result.error
    graders = next(n for n in result.nodes if n.node == "graders")
    grades = graders.output["grades"]      # Done once two agree: the third is in only if it finished by then
    assert len(grades) in (2, 3) and all(g == {"verdict": "a tidy reply", "score": 0.9} for g in grades)
    assert result.output == {"verdict": "a tidy reply", "agreed": True}


def test_a_join_whose_annotation_the_branches_do_not_fit_says_so(spoke):
    edit(spoke, "experiments/brake_panel/flows/panel/nodes/graders/graders.py", "JoinState[Grade]",
         "JoinState[PanelCall]")
    edit(spoke, "experiments/brake_panel/flows/panel/nodes/graders/graders.py", "import Grade", "import Grade, PanelCall")
    project = load_project(spoke)
    result = run_flow(project, panel(project), {"summary": "A squeaky brake", "action": "fix"})
    assert result.error.code == "E_POLICY_RAISED"
    assert re.search(r"node graders: policy agreeing takes PanelCall, but branch first's output does not fit it: "
                     r"agreed: Field required", result.error.message), result.error.message


def test_an_inference_check_named_bare_lives_beside_the_inference_file(spoke):
    """grade.py holds `confident`; the nodes reading the inference are first, second and third."""
    project = load_project(spoke)
    result = run_flow(project, panel(project), {"summary": "A gift", "action": "refund"}, end="graders")
    assert result.error is None, result.error
    first = next(n for n in result.nodes if n.node == "graders__first")
    assert [c.check for c in first.checks] == ["use: max_words", "confident"], first.checks
    assert all(c.passed for c in first.checks)


def test_a_flow_py_reusing_a_project_inference_runs_its_checks_beside_that_inference(spoke):
    """draft_writers' flow.py names the project's draft inference; its check short_enough is in
    flows/repair/nodes/draft/draft.py, not beside the flow.py."""
    project = load_project(spoke)
    flow = project.experiments["draft_writers"].flows["drafting"]
    result = run_flow(project, flow, {"summary": "A squeaky brake", "action": "fix"})
    assert result.error is None, result.error
    write = next(n for n in result.nodes if n.node == "write")
    assert [c.check for c in write.checks] == ["short_enough"] and write.checks[0].passed


def test_a_variant_slot_chosen_by_an_input_path(spoke):
    """draft's `closing` slot reads `on: "action"`, an input path without $, as AQVEN reads it."""
    project = load_project(spoke)
    flow = project.experiments["draft_writers"].flows["drafting"]
    texts = {}
    for action in ("refund", "fix"):
        result = run_flow(project, flow, {"summary": "A gift", "action": action})
        write = next(n for n in result.nodes if n.node == "write")
        texts[action] = write.detail["variants"]["closing"]
    assert texts == {"refund": "Say when the money is back on the card.\n",
                     "fix": "Thank the customer for riding with us.\n"}


def test_a_join_failed_by_every_branchs_answer_is_the_models_failure(spoke):
    """Every grader's verdict fails its max_words check: the panel's join cannot agree. That is what the
    models did (a counted failure), not an error of the engine."""
    edit(spoke, "experiments/brake_panel/flows/panel/nodes/graders/grade.inference.yaml", "max: 5", "max: 1")
    project = load_project(spoke)
    result = run_flow(project, panel(project), {"summary": "A squeaky brake", "action": "fix"})
    assert result.error.code == "E_JOIN_FAILED"
    assert [c.code for c in result.error.causes] == ["check_failed"] * 3
    cause = attempt.root_cause(result.error)
    assert cause.code == "check_failed" and codes.outcome_of(cause.code) == "model_fail"
    assert "join agreeing: 0 graders answered; the panel needs 2 who agree" in cause.message


def run_node(project, node_id: str, node_outputs: dict):
    providers = {s.id: registry.build(s, package=project.package, root=project.root) for s in project.spec.providers}
    plan = Assembly(project.flows["repair"], start=node_id, end=node_id)
    inputs = {"customer": {"customer_id": "c_0001", "name": "Ada", "locale": "en-GB"}, "channel": "web",
              "message": "My brake squeaks."}
    return asyncio.run(Runner(project, providers).run(plan, inputs, {"date": "2026-10-02"}, node_outputs))


def test_a_tool_function_gets_its_context_with_the_secrets_of_its_tool(spoke, monkeypatch):
    """lookup_part(ctx: ToolContext, part_id: PartIdField) reads ctx.secret("stock_token"): STOCK_TOKEN."""
    project = load_project(spoke)
    given = {"triage": {"summary": "A squeaky brake", "action": "fix", "part_id": "p_brake1", "form": {}}}
    monkeypatch.setenv("STOCK_TOKEN", "t0ken")
    result = run_node(project, "lookup", given)
    assert result.error is None, result.error
    assert result.output == {"part": {"part_id": "p_brake1", "label": "brake pad", "price": 12.5}}
    monkeypatch.delenv("STOCK_TOKEN")
    result = run_node(load_project(spoke), "lookup", given)
    assert result.error.code == "code_invalid"
    assert "secret stock_token of the tool: ref:env/STOCK_TOKEN is not set" in result.error.message


def test_a_tool_with_wait_is_polled_until_its_job_is_done(spoke):
    """start_label returns a JobHandle (with the call's idempotency key and a stored blob); poll_label answers
    JobPending, then JobDone with the output."""
    project = load_project(spoke)
    result = run_node(project, "label", {"finish": {"reply": "We fix it.", "action": "fix", "approved": True}})
    assert result.error is None, result.error
    assert result.output == {"label_id": "label 10 chars"}
    assert (spoke / ".aqven" / "blobs").is_dir()


def test_every_experiment_of_the_showcase_shaped_project_reaches_a_verdict(pytester, xdist):
    write_project(pytester.path / "spoke")
    result = pytester.runpytest("spoke", "-p", "no:cacheprovider", "-rs", *xdist)
    lines = [line for line in result.outlines if re.match(r"^[a-z_]+ \(dev, \d+/\d+ attempts\): ", line)]
    assert sorted(line.split(" ")[0] for line in lines) == ["brake_panel", "draft_writers", "repair_look"], \
        "\n".join(result.outlines[-30:])
    assert "skipped" not in result.outlines[-1] and "error" not in result.outlines[-1], result.outlines[-1]
    result.assert_outcomes(passed=11, xfailed=1)
