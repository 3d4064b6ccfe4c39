"""Real AQVEN projects load: a project shaped like AQVEN's showcase passes `aqven check` with nothing to
report, its user code imports `<package>.types` and AQVEN's API names, and each broken copy of it gets
the diagnostic that names its problem."""
from __future__ import annotations

import importlib
import sys

import pytest
from pydantic import ValidationError

from pytest_aqven.api.check import check_root
from pytest_aqven.diagnostics import render_text
from pytest_aqven.project.loader import load_project


def codes(root) -> list[str]:
    return sorted(d.code for d in check_root(root))


def edit(root, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_showcase_shaped_project_is_clean(spoke):
    found = check_root(spoke)
    assert found == [], render_text(found)


def test_package_types_are_importable_with_aqvens_names_and_enforce_constraints(spoke):
    project = load_project(spoke)
    from pytest_aqven.project import coderefs
    coderefs.mount_package("spoke", spoke)
    types = importlib.import_module("spoke.types")
    assert types is sys.modules["spoke.types"] and not (spoke / "types.py").exists()
    # registry types, union variants, id types, node/inference/tool models
    names = {"TicketRequest", "TicketForm", "TicketFormRepair", "TicketFormQuestion", "PartId", "PartIdField",
             "RepairPrepareOut", "RepairPrepareIn", "TriageIn", "TriageOut", "LookupPartOut", "Score"}
    assert names <= set(dir(types))
    # the runner validates with the very same classes
    assert types.RepairPrepareOut is project.types.record(
        "RepairPrepareOut", project.flows["repair"].nodes["prepare"].spec.out)
    part = types.Part(part_id="p_brake1", label="brake pad", price=1.0)
    with pytest.raises(ValidationError):
        types.RepairPrepareOut(message="x" * 2001, form_fields=[], parts=[part])      # maxLength
    with pytest.raises(ValidationError):
        types.RepairPrepareOut(message="ok", form_fields=[], parts=[])                 # minItems
    with pytest.raises(ValidationError):
        types.Part(part_id="P-1", label="x", price=1.0)                                # id pattern
    with pytest.raises(ValidationError):
        types.Part(part_id="p_abc", label="x", price=10000)                            # exclusiveMaximum
    form = importlib.import_module("pydantic").TypeAdapter(types.TicketForm)
    assert type(form.validate_python({"kind": "question", "topic": "saddles"})).__name__ == "TicketFormQuestion"
    with pytest.raises(ValidationError):
        form.validate_python({"kind": "warranty"})                                     # not a variant
    with pytest.raises(AttributeError, match="has no type Nope"):
        types.Nope


def test_package_types_name_every_shape_as_aqvens_generator_does(spoke):
    """`aqven generate` names: <Inference>In/Out of every inference, <Tool>In/Out of tools with run,
    <Flow><Node>In/Out of a project flow's code nodes, <Experiment><Flow><Node>In/Out of a local flow's and
    <Experiment><Node>In/Out of an experiment's own nodes; none for a flow.py's nodes or an MCP tool."""
    project = load_project(spoke)
    from pytest_aqven.project import coderefs
    coderefs.mount_package("spoke", spoke)
    types = importlib.import_module("spoke.types")
    shapes = {n for n in types.__all__ if n.endswith(("In", "Out"))}
    assert shapes == {"DecideIn", "DecideOut", "DraftIn", "DraftOut", "GradeIn", "GradeOut", "TriageIn", "TriageOut",
                      "LookupPartIn", "LookupPartOut", "PrintLabelIn", "PrintLabelOut", "RepairPrepareIn", "RepairPrepareOut", "RepairFinishIn",
                      "RepairFinishOut", "BrakePanelPanelSettleIn", "BrakePanelPanelSettleOut", "BrakePanelLenientIn",
                      "BrakePanelLenientOut"}
    from pytest_aqven.engine.runner import Runner
    from pytest_aqven.project.typesmodule import code_stem
    runner, panel = Runner(project, {}), project.experiments["brake_panel"].flows["panel"]
    lenient = project.experiments["brake_panel"].alternatives["lenient"]
    for stem, node in ((code_stem(project, panel, panel.nodes["settle"]), panel.nodes["settle"]),
                       (code_stem(project, panel, lenient), lenient)):      # the runner validates with them
        assert runner.record(f"{stem}Out", node.spec.out) is getattr(types, f"{stem}Out")
    settle = types.BrakePanelPanelSettleIn(grades=[{"verdict": "send", "score": 0.5}])
    assert type(settle.grades[0]) is types.Grade                           # typed inputs, as generated
    with pytest.raises(ValidationError):
        types.BrakePanelLenientOut(verdict="send", agreed=True, extra=1)   # closed, like every generated model
    from aqven.spec import GENERATED_CONFIG, describe_annotation
    # enums, value types and unions are named aliases (`type X = ...` in AQVEN's module), an id's Field its NewType
    named = {n: str(describe_annotation(getattr(types, n))[0]) for n in ("RepairAction", "Score", "TicketForm",
                                                                          "PartIdField", "Part")}
    assert named == {"RepairAction": "RepairAction", "Score": "Score", "TicketForm": "TicketForm",
                     "PartIdField": "PartId", "Part": "Part"}
    assert types.Grade.model_config["frozen"] and GENERATED_CONFIG == {
        "extra": "forbid", "frozen": True, "revalidate_instances": "always", "serialize_by_alias": True}
    assert all(types.Grade.model_config[k] == v for k, v in GENERATED_CONFIG.items())


def test_a_field_named_like_a_keyword_is_its_name_with_an_underscore(tmp_path):
    """As AQVEN's generated models: `from` is the attribute `from_`, read and written as "from"."""
    from tests.engine_projects import record, write
    root = write(tmp_path / "kw", {"types/span.yaml": record("Span", **{"from": "Date", "json": "Text"})}, "kw")
    project = load_project(root)
    span = project.types.named("Span").model_validate({"from": "2026-10-02", "json": "{}"})
    assert str(span.from_) == "2026-10-02" and span.json_ == "{}"
    assert span.model_dump(mode="json") == {"from": "2026-10-02", "json": "{}"}


def test_aqven_api_names_resolve_to_pytest_aqvens_classes(spoke):
    load_project(spoke)
    from pytest_aqven.project import coderefs
    coderefs.mount_package("spoke", spoke)
    from aqven.policies import EvalContext, NoParams, Verdict
    from aqven.runtime import JobDone, JobHandle, ToolContext
    from aqven.spec import DynamicValue, FieldSpec, Image, flow

    from pytest_aqven.engine import evaluators
    assert (EvalContext, NoParams, Verdict) == (evaluators.EvalContext, evaluators.NoParams, evaluators.Verdict)
    assert ToolContext(secrets={"k": "v"}).secret("k") == "v"
    assert JobDone[int](value=3).value == 3 and JobHandle(job_id="j", provider="p").job_id == "j"
    from aqven.runtime import JobPending, JobPoll
    from pydantic import TypeAdapter
    assert TypeAdapter(JobPoll[int]).validate_python({"value": 4}) == JobDone[int](value=4)
    assert isinstance(TypeAdapter(JobPoll[int]).validate_python({}), JobPending)
    assert Image.model_validate({"$media": "image/png", "file": "@root/x.png"}).media_type == "image/png"
    with pytest.raises(ValidationError):
        Image.model_validate({"$media": "audio/wav", "file": "@root/x.wav"})
    with pytest.raises(ValidationError):
        FieldSpec(name="photo", type="Image", description="media is not a form field")
    assert DynamicValue(value={"a": 1}, fields=(), schema_hash="x").value == {"a": 1}
    assert callable(flow)


def test_aqven_policies_are_the_engines_own_states_and_decisions():
    """One set of classes: a user's join sees the engine's JoinState, may annotate it as JoinState[T], and a
    branch that succeeded with an empty output counts as a value."""
    from pytest_aqven import compat
    compat.install()
    from aqven import policies as api

    from pytest_aqven.engine import policies as engine
    assert (api.JoinState, api.Done, api.LoopState, api.Default) == (engine.JoinState, engine.Done, engine.LoopState,
                                                                     engine.Default)
    state = api.JoinState[str](completed=(api.BranchResult("a", None), api.BranchResult("b", error="E: x")),
                               pending=("c",))
    assert state.values == (None,) and state.errors == ("E: x",)
    loop = api.LoopState(iterations=({"score": {"out": {"value": 0.4}}},))
    assert loop.read("$iter.score.out.value") == 0.4 and loop.read("not a path") is None


MUTATIONS = [
    ("agents/mechanic/mechanic.yaml", '- "find_history"', '- "find_histroy"', "E_TOOL_UNKNOWN"),
    ("agents/mechanic/mechanic.yaml", '  - "lookup_part"\n  assignee', '  - "order_part"\n  assignee',
     "E_APPROVAL_TOOL_UNKNOWN"),
    ("agents/mechanic/mechanic.yaml", 'agent: "expert"', 'agent: "nobody"', "E_AGENT_UNKNOWN"),
    ("agents/mechanic/mechanic.yaml", 'inference: "triage"', 'inference: "nothing"', "E_INFERENCE_UNKNOWN"),
    ("agents/mechanic/mechanic.yaml", '- "catalog"', '- "catalogue"', "E_MCP_SERVER_UNKNOWN"),
    ("agents/mechanic/mechanic.yaml", "./mechanic.instructions.md", "./missing.md", "E_FILE_UNREADABLE"),
    ("agents/mechanic/mechanic.yaml", "subagents:", "subagent:", "E_UNKNOWN_KEY"),
    ("types/records/customer.yaml", "minLength: 1", "minLength: 100", "E_SPEC_INVALID"),
    ("types/ids/part_id.yaml", 'pattern: "^p_[a-z0-9]{3,8}$"', 'pattern: "^p_[a-z"', "E_SPEC_INVALID"),
    ("flows/repair/nodes/triage/triage.inference.yaml", 'default: "written"', 'default: "shouted"',
     "E_VARIANT_FILE_MISSING"),
    ("flows/repair/nodes/triage/triage.inference.yaml", '- type: "PartId"', '- type: "Part"',
     "E_ALLOWED_SET_INVALID"),
    ("flows/repair/nodes/triage/triage.inference.yaml", 'schema_from: "$in.form_fields"', 'schema_from: "$in.message"',
     "E_SCHEMA_FROM_INVALID"),
    ("flows/repair/nodes/triage/triage.inference.yaml", 'action: "fix"', 'action: "repaint"', "E_EXAMPLE_INVALID"),
    ("flows/repair/nodes/triage/triage.inference.yaml", 'run: "summary_first"', 'run: "summary_last"',
     "E_CODE_REF_UNRESOLVED"),
    ("flows/repair/nodes/triage/triage.inference.yaml", 'use: "not_empty"', 'use: "not_blank"', "E_POLICY_UNKNOWN"),
    ("flows/repair/nodes/draft/draft.inference.yaml", 'on: "action"', 'on: "actions"', "E_REF_INVALID"),
    ("flows/repair/nodes/draft/draft.inference.yaml", 'run: "short_enough"', 'run: "short"', "E_CODE_REF_UNRESOLVED"),
    ("flows/repair/nodes/triage/triage.inference.yaml", "triage.output.display.liquid", "gone.display.liquid",
     "E_FILE_UNREADABLE"),
    ("flows/repair/nodes/to_form/to_form.node.yaml", 'to: "TicketForm"', 'to: "TicketShape"', "E_TYPE_UNKNOWN"),
    ("flows/repair/nodes/lookup/lookup.node.yaml", 'tool: "lookup_part"', 'tool: "lookup_parts"', "E_TOOL_UNKNOWN"),
    ("flows/repair/nodes/lookup/lookup.node.yaml", 'name: "part_id"', 'name: "part_id"\n  from: "$triage.out.part_id"\n- name: "part"', "E_BINDING_UNKNOWN"),
    ("flows/repair/nodes/approve/approve.node.yaml", 'policy: "escalate"', 'policy: "shrug"', "E_SPEC_INVALID"),
    ("flows/repair/nodes/approve/approve.node.yaml", 'from: "$lookup.out.part"', 'from: "$lookup.out.parts"',
     "E_REF_FIELD_UNKNOWN"),
    ("tools/lookup_part.yaml", 'effect: "read"', 'effect: "browse"', "E_SPEC_INVALID"),
    ("tools/find_history.yaml", 'server: "catalog"', 'server: "shop"', "E_MCP_SERVER_UNKNOWN"),
]


@pytest.mark.parametrize("rel, old, new, code", MUTATIONS, ids=[m[3] + ":" + m[2][:24] for m in MUTATIONS])
def test_a_broken_copy_gets_the_code_that_names_its_problem(spoke, rel, old, new, code):
    edit(spoke, rel, old, new)
    assert codes(spoke) == [code], render_text(check_root(spoke))


def test_flow_py_whose_build_raises_is_a_diagnostic_at_its_line(spoke):
    edit(spoke, "experiments/draft_writers/flows/drafting/flow.py", "    write = llm(", "    1 / 0\n    write = llm(")
    found = check_root(spoke)
    assert [d.code for d in found] == ["E_FLOW_PY_INVALID"], render_text(found)
    assert found[0].render().startswith("experiments/draft_writers/flows/drafting/flow.py:14: error E_FLOW_PY_INVALID: "
                                        "flow drafting: build() raised ZeroDivisionError: division by zero")


def test_flow_py_node_is_validated_like_a_node_file(spoke):
    edit(spoke, "experiments/draft_writers/flows/drafting/flow.py", 'agent="writer"', 'agent="ghost"')
    assert codes(spoke) == ["E_AGENT_UNKNOWN"]


def test_a_code_node_gets_models_for_its_annotated_parameters(spoke):
    """prepare(request: TicketRequest) reads request.message: the runner passes a TicketRequest, not a dict."""
    from tests.engine_projects import run
    project = load_project(spoke)
    inputs = {"customer": {"customer_id": "c_0001", "name": "Ada", "locale": "en-GB"}, "channel": "web",
              "message": "  My   brake squeaks.  "}
    result = run(project, "repair", inputs, start="prepare", end="prepare", context={"date": "2026-10-02"})
    assert result.error is None, result.error
    assert result.output["message"] == "My brake squeaks."              # a range's output is its last node's
    assert result.output["form_fields"][0]["enum"] == ["repair", "question"]
