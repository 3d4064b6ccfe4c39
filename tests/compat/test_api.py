"""Every public name of AQVEN's `aqven.spec`, `aqven.policies` and `aqven.runtime` (read from AQVEN's public
sources: the `__init__.py` of each package, by the module that defines each name) is importable from the
same module here, docs/compat.md lists it, and the names do what AQVEN's do."""
from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from pytest_aqven import compat

from ..compat_project import write_project
from ..engine_projects import flow, node, write

DOCS = Path(__file__).resolve().parents[2] / "docs" / "compat.md"

SPEC = {  # aqven/spec/<module>.py: its names
    "agent": """
        AgentOutputSpec AgentSpec CapabilityOverride DefaultOnTimeout EscalateOnTimeout FailOnTimeout
        ModelSettingsSpec OutputModeSetting OutputModeSource StructuredMode SubagentSpec TimeoutPolicy
        ToolApprovalSpec
    """,
    "builder": """
        BuilderError BuiltNode CodeNode Flow In Inference LlmNode Out ToolNode code describe_annotation
        flow inference_spec llm tool
    """,
    "builtins": """
        ALWAYS_BOUNDED_TYPES AUDIO BOOL BUILTIN_TYPE_IDS CONTEXT_TYPES DATE DATE_TIME DOCUMENT DYNAMIC
        DYNAMIC_TYPES FIELD_SPEC FLOAT IMAGE INT LOCALE MAP_ITEM_ERROR MEDIA_MODALITY MEDIA_TYPES
        RECORD_LABEL SCALAR_TYPES TENANT_ID TEXT TIME_ZONE VIDEO Audio Document DynamicLimits
        DynamicValue FieldSpec Image MapItemError MediaValue Video
    """,
    "common": """
        Constraints Limits SecretBinding SpecModel
    """,
    "datasets": """
        DatasetCase DatasetFile
    """,
    "documents": """
        SPEC_MODEL_BY_KIND SpecDocument
    """,
    "experiments": """
        CaseSelection CompareQuestion ExperimentCheck ExperimentPlan ExperimentSpec ExperimentSubject
        Guardrail LookQuestion NoninferiorQuestion Question ThresholdQuestion VariantSpec
    """,
    "fields": """
        BoundField FieldBinding FieldDecl FieldHead InputField OutputField
    """,
    "findings": """
        SHA256_PATTERN UUID_PATTERN FindingCell FindingChange FindingEstimate FindingInputs FindingJudge
        FindingScope FindingSpec FindingVariant
    """,
    "flow": """
        ContractPredicate FamiliesDistinct FamilyDisjointFromInput FieldBefore FlowSpec
    """,
    "inference": """
        AllowedSetSpec CheckSpec DisplayFormatterSpec ExampleSpec InferenceDisplaySpec InferenceSpec
        VariantRef VariantSlot
    """,
    "mcp": """
        McpServerSpec SecretHeader
    """,
    "modelgen": """
        BUILTIN_ANNOTATIONS GENERATED_CONFIG FieldSpecTypeIssue FieldSpecTypeProblem ItemConstraints
        TypeModelError TypeModels annotated_record build_type_models dynamic_record field_annotation
        field_spec_type_problem normalized_schema overridden_model record_model
    """,
    "names": """
        API_VERSION BLOB_ID_PATTERN CODE_ALIAS_BODY CODE_FILE_PATTERN CODE_REF_PATTERN FUNCTION_BODY
        INSTRUCTIONS_PATTERN MODEL_PATTERN NAME_PATTERN PROMPT_REF_PATTERN PROVIDER_NAME_PATTERN
        REF_PATTERN SECRET_REF_PATTERN TEXT_SUFFIX TYPE_REF_PATTERN VARIANT_REF_PATTERN AgentId ArmId
        BlobId CellVerdict CodeRef DatasetId Effect ExperimentId FactorKind FlowId InferenceId Locale
        LoopStopReason McpServerId MetricDirection MetricKind Modality ModelFamily ModelString NodeId
        NodeKind OnFail OutcomePolicy PiiClass PiiDetector PromptLevel ProviderName Retention
        RunContextKey SecretRef SeriesMetric SeriesSplit SpecKind TenantId TimeZone ToolId TrustLevel
        TypeId TypeKind VariantId VerdictReason VerdictState
    """,
    "nodes": """
        NODE_SPEC_CLASSES UNSUPPORTED_NODE_KINDS CallNodeSpec CodeNodeSpec HumanNodeSpec LlmNodeSpec
        LoopNodeSpec MapNodeSpec NarrowNodeSpec NodeBase NodeHeader NodeSpec NodeTag ParallelNodeSpec
        SwitchCase SwitchNodeSpec ToolNodeSpec inner_nodes
    """,
    "policy": """
        EvaluatorRef PolicyRef
    """,
    "profiles": """
        MODEL_PROFILES PROVIDER_FAMILIES VENDOR_FAMILIES ModelProfile ModelRef ModelSyntaxError
        parse_model resolve_profile
    """,
    "project": """
        DataPolicy OpenRouterRouting PiiPolicy ProjectPolicies ProjectSpec ProviderCapabilitiesSpec
        ProviderKind ProviderLimits ProviderNameField ProviderSpec Rename RenameKind ResearchSettings
        TrustPolicy
    """,
    "prompts": """
        PromptMessage PromptRole RenderedPrompt assistant system user
    """,
    "refs": """
        FieldStep IndexStep LiftStep Ref RefRoot RefStep RefSyntaxError parse_ref
    """,
    "schema": """
        SCHEMA_DIALECT editor_schema schema_path write_editor_schemas
    """,
    "tool": """
        JobWaitSpec McpToolSource ToolSpec
    """,
    "typeref": """
        TypeRef TypeRefSyntaxError parse_type_ref
    """,
    "types": """
        AllowedSetMode CodeFormat EnumType EnumValue IdType RecordType TypeHeader TypeSpec UnionType
        UnionVariant ValueBase ValueHead ValueType
    """,
}
POLICIES = {
    "contracts": """
        POLICY_CONFIG BranchResult Continue Default Done EvalContext Evaluator Fail ItemDecision
        ItemErrorPolicy JoinDecision JoinPolicy JoinState LoopState NoParams RefPath SelectPolicy Skip
        Slot Stop StopDecision StopPolicy Verdict Wait
    """,
    "__init__": """
        BUILTINS builtin control evaluators
    """,
}
RUNTIME = {
    "address": """
        ClientOpId ExecutionAddress JsonObject Problem RequestModel ResourceModel RunId node_address
    """,
    "events": """
        OUTPUT_DELTA_BATCH_MS RUN_EVENT_ADAPTER RUN_EVENT_TYPES InferenceInputCaptured LoopExited
        LoopIterationFinished NodeAnswerIgnored NodeAttemptDiscarded NodeAttemptFailed NodeFinished
        NodeOutputDelta NodeProgress NodeResumed NodeStarted NodeSuspended NodeWaitEscalated
        NodeWaitTimedOut OutputPartKind RunEvent RunEventBase RunEventType RunFinished RunResumed
        RunStartedEvent RunSuspended
    """,
    "executions": """
        Attempt AttemptCause CheckOutcome ExecutionDetail ModelErrorDetails NodeExecution PromptPart
        PromptTrace PromptTraceMessage ResponseTrace RunError SlotProvenance SlotRange
    """,
    "human": """
        HumanWait HumanWaitAttempt HumanWaitDetail IgnoredAnswer ResumeRequest ResumeResult
        ScriptedAnswer ToolApprovalDecision
    """,
    "options": """
        CapabilityRoute CassetteConfig CassetteMode ModelCall ModelProfile ModelRoute RunContext
        RunOptions RunResult
    """,
    "overrides": """
        OVERRIDE_CODE NodeOutputError NodeOutputOverride node_failure node_output override_for
    """,
    "project": """
        FlowHandle FlowNotFound FlowSignatureMismatch PackageNotOnDisk Project ProjectInvalid Run
    """,
    "replay": """
        McpToolStub ProviderFault ProviderFaultKind ToolReplayMiss
    """,
    "runs": """
        CancelRequest CancelResult ForkOverrides ForkRequest HumanAnswerStatus Lineage NodeCounts Page
        RunForked RunInputConflict RunSnapshot RunStartRequest RunStarted RunSummary SpecVersionInfo
    """,
    "steps": """
        BlobStore JobDone JobFailed JobHandle JobPending JobPoll ToolContext
    """,
    "values": """
        BlobUploaded BlobValue InlineValue ValueRef
    """,
    "vocabulary": """
        MODEL_OUTPUT_ERROR_CODES AttemptAction AttemptCauseKind CallOutcome CostSource ExecutionStatus
        FinishedExecutionStatus ForkBase IncludePayloads LineageRelation ModelOutputErrorCode
        OnTimeoutAction PromptPartKind PromptRole PromptSource ResolvedOutputMode ResumeOutcome RunMode
        RunStatus SpecOrigin TerminalRunStatus WaitKind WaitState
    """,
}
PACKAGES = {"spec": SPEC, "policies": POLICIES, "runtime": RUNTIME}


def names(table: dict[str, str]) -> set[str]:
    return {n for text in table.values() for n in text.split()}


@pytest.fixture(scope="module", autouse=True)
def aqven_names():
    compat.install()


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_public_name_of_aqven_is_exported_from_its_module(package):
    top = importlib.import_module(f"aqven.{package}")
    assert set(top.__all__) == names(PACKAGES[package])
    assert top.__pytest_aqven_compat__
    for module, text in PACKAGES[package].items():
        mod = top if module == "__init__" else importlib.import_module(f"aqven.{package}.{module}")
        missing = [n for n in text.split() if not hasattr(mod, n) or getattr(mod, n) is not getattr(top, n)]
        assert not missing, f"aqven.{package}.{module} lacks {missing}"


def test_docs_list_every_name_with_the_aqven_module_that_defines_it():
    rows = re.findall(r"^\| `aqven/(\w+)/(\w+)\.py` \| (.+?) \| .+ \|$", DOCS.read_text(encoding="utf-8"), re.M)
    listed = {(package, module): set(re.findall(r"`([^`]+)`", cell)) for package, module, cell in rows}
    expected = {(package, module): set(text.split()) for package, table in PACKAGES.items()
                for module, text in table.items()}
    assert listed == expected
    assert len(names(SPEC)) == 264 and len(names(POLICIES)) == 28 and len(names(RUNTIME)) == 129


# --- aqven.spec ---------------------------------------------------------------------------------

def test_patterns_ids_and_enums_are_aqvens_vocabulary():
    from aqven import spec
    assert re.fullmatch(spec.REF_PATTERN, "$judges.out.verdicts[0].scores[*]")
    assert re.fullmatch(spec.REF_PATTERN, "$run.context.locale") and not re.fullmatch(spec.REF_PATTERN, "$run.x")
    assert re.fullmatch(spec.MODEL_PATTERN, "openrouter:openai/gpt-oss-20b")
    assert re.fullmatch(spec.PROMPT_REF_PATTERN, "@root.code.prompts:render")
    assert re.fullmatch(spec.PROMPT_REF_PATTERN, "@flow/prompts/reply.md")
    assert re.fullmatch(spec.SECRET_REF_PATTERN, "ref:env/ORDERS_TOKEN")
    assert re.fullmatch(spec.VARIANT_REF_PATTERN, "smart_wifi") and re.fullmatch(spec.TYPE_REF_PATTERN, "Part[]?")
    assert spec.NodeKind("parallel") is spec.NodeKind.PARALLEL and spec.PromptLevel.CODE == 3
    assert spec.FactorKind.USE == "use" and spec.TypeId("Customer") == "Customer"
    assert spec.MEDIA_MODALITY[spec.IMAGE] == spec.Modality.IMAGE and spec.DATE in spec.ALWAYS_BOUNDED_TYPES


def test_references_and_type_references_parse_with_the_position_of_a_mistake():
    from aqven.spec import FieldStep, IndexStep, LiftStep, RefRoot, RefSyntaxError, parse_ref, parse_type_ref
    ref = parse_ref("$judges.out.verdicts[2].scores[*].score")
    assert (ref.root, ref.node_id) == (RefRoot.NODE, "judges")
    assert ref.steps == (FieldStep("verdicts"), IndexStep(2), FieldStep("scores"), LiftStep(), FieldStep("score"))
    assert str(ref) == "$judges.out.verdicts[2].scores[*].score"
    assert parse_ref("$branch.gpt.text").key == "gpt" and parse_ref("$run.context.date").root == RefRoot.RUN_CONTEXT
    with pytest.raises(RefSyntaxError) as bad:
        parse_ref("$input.items[x]")
    assert bad.value.position == 12 and "a reference step" in bad.value.reason
    typed = parse_type_ref("KbChunk[]?")
    assert (typed.type_id, typed.is_list, typed.is_optional, str(typed.item)) == ("KbChunk", True, True, "KbChunk")
    with pytest.raises(ValueError, match="nested lists"):
        parse_type_ref("Text[][]")


def test_file_models_validate_the_showcase_shaped_project(tmp_path):
    """Each SPEC_MODEL_BY_KIND adapter reads the files of its kind; the models are those the loader uses."""
    from aqven.spec import SPEC_MODEL_BY_KIND, AgentSpec, NodeSpec, SpecKind, inner_nodes

    from pytest_aqven.project import specs
    from pytest_aqven.project.yamlpos import load_yaml
    root = write_project(tmp_path / "spoke")

    def data(rel):
        return load_yaml(root / rel, root).data
    kinds = {"aqven.yaml": SpecKind.PROJECT, "agents/expert.yaml": SpecKind.AGENT, "tools/lookup_part.yaml":
             SpecKind.TOOL, "mcp/catalog.yaml": SpecKind.MCP_SERVER, "types/unions/ticket_form.yaml": SpecKind.TYPE,
             "flows/repair/flow.yaml": SpecKind.FLOW, "flows/repair/nodes/route/route.node.yaml": SpecKind.NODE,
             "flows/repair/nodes/triage/triage.inference.yaml": SpecKind.INFERENCE,
             "datasets/repair_tickets.yaml": SpecKind.DATASET,
             "experiments/brake_panel/experiment.yaml": SpecKind.EXPERIMENT}
    for rel, kind in kinds.items():
        SPEC_MODEL_BY_KIND[kind].validate_python(data(rel))
    assert AgentSpec is specs.AgentSpec
    panel = data("experiments/brake_panel/flows/panel/nodes/graders/graders.node.yaml")
    from pydantic import TypeAdapter
    assert inner_nodes(TypeAdapter(NodeSpec).validate_python(panel)) == ("first", "second", "third")
    with pytest.raises(ValidationError):
        SPEC_MODEL_BY_KIND[SpecKind.PROJECT].validate_python({**data("aqven.yaml"),
                                                              "renames": [{"kind": "node", "from": "a.b"}]})


def test_type_models_build_from_declarations_and_compare_by_what_they_validate(tmp_path):
    from aqven.spec import (
        GENERATED_CONFIG,
        FieldSpec,
        TypeModelError,
        build_type_models,
        dynamic_record,
        field_spec_type_problem,
        normalized_schema,
        record_model,
    )

    from pytest_aqven.project.loader import load_project
    project = load_project(write_project(tmp_path / "spoke"))
    models = build_type_models(project.types.specs)
    assert not models.failures and "Part" in models and "Text" in models
    part = models.model("Part")
    assert part.model_config["frozen"] and part.model_config == {**part.model_config, **GENERATED_CONFIG}

    class Mirror(BaseModel):
        model_config = GENERATED_CONFIG
        part_id: Annotated[str, Field(pattern=r"^p_[a-z0-9]{3,8}$", max_length=10)]
        label: Annotated[str, Field(max_length=60)]
        price: Annotated[float, Field(ge=0, lt=10000)]
    assert normalized_schema(part) == normalized_schema(Mirror)
    with pytest.raises(TypeModelError, match="not a record"):
        models.model("RepairAction")
    fields = project.flows["repair"].nodes["prepare"].spec.out
    assert normalized_schema(models.record("X", fields)) == normalized_schema(
        record_model("Y", fields, models.resolve))
    form = dynamic_record("Form", [FieldSpec(name="kind", type="Text", description="k", enum=["repair", "question"]),
                                   FieldSpec(name="where", type="Record", description="w",
                                             fields=[FieldSpec(name="city", type="Text", description="c")])],
                          models.resolve)
    assert form(kind="repair", where={"city": "Oslo"}).where.city == "Oslo"
    with pytest.raises(ValidationError):
        form(kind="warranty", where={"city": "Oslo"})
    assert field_spec_type_problem("TicketForm", project.types.specs).issue == "forbidden"
    assert field_spec_type_problem("Nope", project.types.specs).issue == "unknown"
    assert field_spec_type_problem("Part", project.types.specs) is None


class Reply(BaseModel):
    text: Annotated[str, Field(description="The reply", max_length=300)]
    score: Annotated[float, Field(description="How sure", ge=0, le=1)]


def polish(draft: Annotated[str, Field(description="The draft", max_length=800)],
           tags: Annotated[list[str], Field(description="Tags", max_length=4)]) -> Reply:
    return Reply(text=draft.strip(), score=1.0)


def undescribed(draft: str) -> Reply:
    return Reply(text=draft, score=0)


def test_builders_read_a_code_nodes_fields_from_its_annotations():
    from aqven.spec import (
        BuilderError,
        In,
        Inference,
        Out,
        code,
        describe_annotation,
        flow,
        inference_spec,
        llm,
        parse_type_ref,
    )

    node = code("polish", polish, bind={"draft": "$input.draft", "tags": "$input.tags"}, description="Polishes")
    assert node.node_id == "polish" and node.spec.run == "tests.compat.test_api:polish"
    ins = {f.name: (f.type, f.max_length, f.max_items, f.from_) for f in node.spec.in_}
    assert ins == {"draft": ("Text", 800, None, "$input.draft"), "tags": ("Text[]", None, 4, "$input.tags")}
    assert {f.name: (f.type, f.maximum) for f in node.spec.out} == {"text": ("Text", None), "score": ("Float", 1)}
    with pytest.raises(BuilderError, match="bind does not match the inputs: missing tags"):
        code("polish", polish, bind={"draft": "$input.draft"}, description="Polishes")
    with pytest.raises(BuilderError, match="field draft: no description"):
        code("bad", undescribed, bind={"draft": "$input.draft"}, description="x")
    write = llm("write", inference="draft", agent="writer", bind={"summary": "$input.summary"}, description="Writes")
    built = flow(description="Polish a draft", input=Reply, output=Reply, returns={"text": "$polish.out.text",
                 "score": "$polish.out.score"}, nodes=[write, node])
    assert built.spec.order == ["write", "polish"] and set(built.nodes) == {"write", "polish"}
    with pytest.raises(BuilderError, match="returns does not match the fields of Reply: missing score"):
        flow(description="x", input=Reply, output=Reply, returns={"text": "$polish.out.text"}, nodes=[node])
    assert str(describe_annotation(list[Reply] | None)[0]) == str(parse_type_ref("Reply[]?"))

    class Grade(Inference):
        summary: str = In(description="The case", max_length=200)
        verdict: str = Out(description="send or hold", pattern="^(send|hold)$")
    spec = inference_spec(Grade, description="A grade", prompt="grade.prompt.md")
    assert [(f.name, f.max_length) for f in spec.in_] == [("summary", 200)]
    assert [(f.name, f.pattern) for f in spec.out] == [("verdict", "^(send|hold)$")]


def test_profiles_and_prompts():
    from aqven.spec import (
        ModelFamily,
        ModelSyntaxError,
        PromptMessage,
        RenderedPrompt,
        parse_model,
        resolve_profile,
        system,
        user,
    )

    from pytest_aqven.project.specs import Capabilities, ProviderCapabilitiesSpec
    assert parse_model("openrouter:meta-llama/llama-3.1-8b").provider == "openrouter"
    with pytest.raises(ModelSyntaxError):
        parse_model("no provider")
    profile = resolve_profile("openrouter:meta-llama/llama-3.1-8b", None,
                              ProviderCapabilitiesSpec(input=["text", "image"]))
    assert profile.family == ModelFamily.META and profile.input == {"text", "image"} and not profile.strict
    assert resolve_profile("openai:gpt-x", Capabilities(family="openai", strict=True)).strict
    prompt = RenderedPrompt(messages=(system("Be brief."), user("Hi")))
    assert prompt.messages[1] == PromptMessage(role="user", text="Hi")
    with pytest.raises(ValidationError):
        RenderedPrompt(messages=())


def test_editor_schemas_are_written_for_every_file_kind(tmp_path):
    import json

    from aqven.spec import SCHEMA_DIALECT, SpecKind, editor_schema, schema_path, write_editor_schemas
    written = write_editor_schemas(tmp_path)
    assert len(written) == len(SpecKind) and schema_path(tmp_path, SpecKind.MCP_SERVER).name == \
        "mcpserver.schema.json"
    agent = json.loads(schema_path(tmp_path, SpecKind.AGENT).read_text())
    assert agent["$schema"] == SCHEMA_DIALECT and "model" in agent["properties"]
    assert editor_schema(SpecKind.FLOW)["properties"]["order"]["type"] == "array"


# --- aqven.policies -----------------------------------------------------------------------------

def test_policy_builtins_by_slot_are_the_engines():
    from aqven.policies import BUILTINS, BranchResult, JoinState, Slot, builtin, control, evaluators

    from pytest_aqven.engine import policies
    assert builtin(Slot.JOIN, "quorum") is control.quorum is policies.quorum
    assert builtin("evaluator", "expected") is evaluators.expected and builtin(Slot.STOP, "nope") is None
    assert set(BUILTINS[Slot.SELECT]) == {"last", "best"}
    params = control.QuorumParams(min_ok=1, on_error="skip")
    waiting = JoinState((BranchResult("a", {"x": 1}), BranchResult("b", error="boom")), ("c",))
    assert type(control.quorum(waiting, params)).__name__ == "Wait"     # every branch joins $ok (docs/engine.md)
    done = control.quorum(JoinState(waiting.completed, ()), params)
    assert type(done).__name__ == "Done" and done.value == ({"x": 1},)


# --- aqven.runtime ------------------------------------------------------------------------------

def test_run_api_models_validate_and_round_trip():
    from aqven.runtime import (
        MODEL_OUTPUT_ERROR_CODES,
        RUN_EVENT_ADAPTER,
        RUN_EVENT_TYPES,
        ForkRequest,
        JobDone,
        JobPending,
        JobPoll,
        NodeFinished,
        RunInputConflict,
        RunStartRequest,
        node_address,
        node_failure,
        node_output,
        override_for,
    )
    address = node_address("judges__qwen", branch_key="qwen")
    event = NodeFinished(seq=3, at=dt.datetime(2026, 10, 2, tzinfo=dt.timezone.utc), run_id="r1", address=address,
                         status="ok", attempt=1, output_ref=None, cost_usd=Decimal("0.01"), tokens_in=5,
                         tokens_out=7, latency_ms=30, model="sim:a", cache_hit=False, degraded=False,
                         checks_failed=0)
    again = RUN_EVENT_ADAPTER.validate_json(RUN_EVENT_ADAPTER.dump_json(event))
    assert again == event and "node_finished" in RUN_EVENT_TYPES and len(RUN_EVENT_TYPES) == 21
    overrides = (node_output("triage", {"summary": "s"}), node_failure("judges__qwen", "down", branch_key="qwen"))
    assert override_for(overrides, address).error.message == "down"
    assert override_for(overrides, node_address("other")) is None
    with pytest.raises(ValidationError, match=str(RunInputConflict())):
        RunStartRequest(flow_id="support_case", mode="live")
    assert ForkRequest.model_validate({"from": address.model_dump()}).from_ == address
    assert "MODEL_RETRIES_EXHAUSTED" in MODEL_OUTPUT_ERROR_CODES
    from pydantic import TypeAdapter
    polled = TypeAdapter(JobPoll[int])
    assert polled.validate_python({"state": "done", "value": 4}) == JobDone[int](value=4)
    assert isinstance(polled.validate_python({"progress": 0.5}), JobPending)


LIB = '''
from pydantic import BaseModel


def shout(text: str) -> dict:
    return {"text": text.upper()}
'''


def test_a_projects_flow_runs_from_python_with_typed_input_and_output(tmp_path):
    from aqven.runtime import (
        FlowNotFound,
        FlowSignatureMismatch,
        Project,
        ProjectInvalid,
        RunContext,
        RunOptions,
        ScriptedAnswer,
    )
    root = write(tmp_path / "loud", {
        "lib.py": LIB,
        "flows/loud/flow.yaml": flow(["shout"], {"text": "$shout.out.text"}),
        "flows/loud/nodes/shout/shout.node.yaml": node("code", run="@root.lib:shout",
                                                       in_=[{"name": "text", "from": "$input.text"}],
                                                       out=[{"name": "text", "type": "Text"}]),
    }, "loud")
    project = Project.load(root)
    handle = project.flow("loud")
    assert handle.input_model.__name__ == "Ask" and handle.output_model.__name__ == "Answer"
    result = asyncio.run(handle.run(handle.input_model(text="hi"), RunOptions(context=RunContext(locale="en"))))
    assert result.status == "completed" and result.error is None
    assert isinstance(result.output, handle.output_model) and result.output.text == "HI"

    from aqven.spec import GENERATED_CONFIG

    class Ask(BaseModel):
        model_config = GENERATED_CONFIG
        text: str

    class Loose(BaseModel):
        model_config = GENERATED_CONFIG
        text: int
    assert project.flow_typed("loud", Ask, Ask).output_model is Ask
    with pytest.raises(FlowSignatureMismatch, match="output"):
        project.flow_typed("loud", Ask, Loose)
    with pytest.raises(FlowNotFound):
        project.flow("quiet")
    with pytest.raises(ValueError, match="RunOptions outputs is not supported"):
        from aqven.runtime import node_output
        asyncio.run(handle.run(Ask(text="x"), RunOptions(outputs=(node_output("shout", {"text": "X"}),))))

    async def events():
        run = await handle.start(Ask(text="yo"), RunOptions(human_answers=(
            ScriptedAnswer(address={"node_id": "nobody", "branch_key": None, "iteration": None,
                                    "item_index": None}, payload={}),)))
        return [e.type for e in [event async for event in run.events()]], await run.status()
    kinds, status = asyncio.run(events())
    assert kinds == ["run_started", "node_started", "node_finished", "run_finished"] and status == "completed"
    (root / "flows/loud/flow.yaml").write_text("apiVersion: [", encoding="utf-8")
    with pytest.raises(ProjectInvalid):
        Project.load(root)
