"""The models of AQVEN's project files under AQVEN's names. Each is the model pytest-aqven validates that
file (or part of it) with (project/specs.py): it accepts every key AQVEN's does, with the experiment
format of the seeds (`varies`, `variants[].nodes`). The few names AQVEN has no file model of ours for
(headers, an evaluator reference, the finding file's parts) are defined here."""
from __future__ import annotations

from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from ....project import specs
from .names import NAME_PATTERN, PROVIDER_NAME_PATTERN, VARIANT_REF_PATTERN, NodeId, ProviderName, SpecKind
from typing import Self

# --- common -----------------------------------------------------------------------------------
SpecModel = specs.Spec
Limits = specs.Limits
SecretBinding = specs.SecretBinding
Constraints = specs.Constraints


class FieldHead(SpecModel):
    """The head of every field declaration: its name, type reference and description."""
    name: str
    type: str
    description: str = Field(min_length=1)


FieldDecl = specs.FieldDecl
InputField = specs.InputField
OutputField = specs.OutputField
BoundField = specs.BoundField
FieldBinding = specs.Binding

# --- types/ -----------------------------------------------------------------------------------
ValueBase = Literal["Text", "Int", "Float", "Bool", "Date", "DateTime"]
AllowedSetMode = Literal["dynamic", "none"]
CodeFormat = Literal["prefixed_ordinal", "identity"]


class TypeHeader(SpecModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    api_version: Literal["aqven/v1"] = Field(alias="apiVersion")
    kind: Literal["Type"]


class ValueHead(TypeHeader):
    type: Literal["value"]
    description: str = Field(min_length=1)
    pii: Literal["none", "pii", "sensitive"] = "none"
    base: ValueBase


EnumValue = specs.EnumValue
RecordType = specs.RecordTypeSpec
EnumType = specs.EnumTypeSpec
UnionVariant = specs.UnionVariant
UnionType = specs.UnionTypeSpec
IdType = specs.IdTypeSpec
ValueType = specs.ValueTypeSpec
TypeSpec = specs.TypeSpec

# --- agents/ ----------------------------------------------------------------------------------
StructuredMode = Literal["tool", "native", "prompted"]
OutputModeSource = Literal["declared", "profile", "known_model", "fallback_models"]


class OutputModeSetting(StrEnum):
    AUTO = "auto"
    TOOL = "tool"
    NATIVE = "native"
    PROMPTED = "prompted"


ModelSettingsSpec = specs.AgentSettings
AgentOutputSpec = specs.AgentOutput
SubagentSpec = specs.Subagent
FailOnTimeout = specs.FailOnTimeout
DefaultOnTimeout = specs.DefaultOnTimeout
EscalateOnTimeout = specs.EscalateOnTimeout
TimeoutPolicy = specs.TimeoutPolicy
ToolApprovalSpec = specs.ToolApproval
CapabilityOverride = specs.Capabilities
AgentSpec = specs.AgentSpec

# --- tools/, mcp/, datasets/ --------------------------------------------------------------------
McpToolSource = specs.McpToolSource
JobWaitSpec = specs.JobWait
ToolSpec = specs.ToolSpec
SecretHeader = specs.SecretHeader
McpServerSpec = specs.McpServerSpec
DatasetCase = specs.CaseSpec
DatasetFile = specs.DatasetSpec

# --- flows and nodes --------------------------------------------------------------------------
FamiliesDistinct = specs.FamiliesDistinct
FamilyDisjointFromInput = specs.FamilyDisjointFromInput
FieldBefore = specs.FieldBefore
ContractPredicate = specs.ContractPredicate
FlowSpec = specs.FlowSpec
PolicyRef = specs.PolicyRef

K = TypeVar("K", bound=str)


class NodeHeader(SpecModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    api_version: Literal["aqven/v1"] = Field(alias="apiVersion")
    kind: Literal["Node"]


class NodeTag(NodeHeader, Generic[K]):
    """The header of a node file with its kind (`NodeTag[Literal["llm"]]`)."""
    node: K


NodeBase = specs.NodeBase
SwitchCase = specs.SwitchCase
LlmNodeSpec = specs.LlmNode
CodeNodeSpec = specs.CodeNode
ToolNodeSpec = specs.ToolNode
HumanNodeSpec = specs.HumanNode
ParallelNodeSpec = specs.ParallelNode
MapNodeSpec = specs.MapNode
SwitchNodeSpec = specs.SwitchNode
LoopNodeSpec = specs.LoopNode
CallNodeSpec = specs.CallNode
NarrowNodeSpec = specs.NarrowNode
NodeSpec = specs.NodeSpec
NODE_SPEC_CLASSES = (LlmNodeSpec, CodeNodeSpec, ToolNodeSpec, HumanNodeSpec, ParallelNodeSpec, MapNodeSpec,
                     SwitchNodeSpec, LoopNodeSpec, CallNodeSpec, NarrowNodeSpec)
UNSUPPORTED_NODE_KINDS = frozenset({"seq", "race", "gate", "try", "const"})   # kinds AQVEN names and refuses


def inner_nodes(spec: Any) -> tuple[NodeId, ...]:
    """The child node ids of a container node (parallel body, map body, switch cases, loop body)."""
    if isinstance(spec, ParallelNodeSpec):
        return tuple(NodeId(n) for n in spec.body.values())
    if isinstance(spec, MapNodeSpec):
        return (NodeId(spec.body),)
    if isinstance(spec, SwitchNodeSpec):
        return tuple(NodeId(c.node) for c in spec.cases.values() if c.node is not None)
    if isinstance(spec, LoopNodeSpec):
        return tuple(NodeId(n) for n in spec.body)
    return ()


class EvaluatorRef(SpecModel):
    """A check's evaluator: a built-in (`use`), a function (`run`), or a judge (`inference` with `agent`)."""
    use: str | None = Field(default=None, pattern=NAME_PATTERN)
    run: str | None = None
    inference: str | None = None
    agent: str | None = None
    with_: dict[str, Any] | None = Field(default=None, alias="with")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        sources = [s for s in (self.use, self.run, self.inference) if s is not None]
        if len(sources) != 1 or (self.inference is None) != (self.agent is None):
            raise ValueError("an evaluator sets exactly one of use, run, or a judge inference together with agent")
        if self.inference is not None and self.with_ is not None:
            raise ValueError("a judge has no with: judge inputs bind by name to the in and out of the evaluated "
                             "inference")
        return self


# --- inferences -------------------------------------------------------------------------------
VariantRef = Annotated[str, Field(pattern=VARIANT_REF_PATTERN)]
CheckSpec = specs.InferenceCheck
DisplayFormatterSpec = specs.DisplayFormatter
InferenceDisplaySpec = specs.InferenceDisplay
AllowedSetSpec = specs.AllowedSet
ExampleSpec = specs.InferenceExample
VariantSlot = specs.VariantSlot
InferenceSpec = specs.InferenceSpec

# --- experiments ------------------------------------------------------------------------------
ExperimentSubject = specs.Subject
CaseSelection = specs.CaseSelection
VariantSpec = specs.VariantSpec
ExperimentCheck = specs.ExperimentCheck
Guardrail = specs.GuardrailSpec
LookQuestion = specs.LookQuestion
ThresholdQuestion = specs.ThresholdQuestion
CompareQuestion = specs.CompareQuestion
NoninferiorQuestion = specs.NoninferiorQuestion
Question = specs.Question
ExperimentPlan = specs.Plan
ExperimentSpec = specs.ExperimentSpec

# --- aqven.yaml -------------------------------------------------------------------------------
ProviderNameField = Annotated[ProviderName, Field(pattern=PROVIDER_NAME_PATTERN)]
ProviderKind = Literal["catalog", "code", "openai_compatible"]
RenameKind = Literal["flow", "node", "type", "prompt", "dataset", "field", "inference", "agent", "tool",
                     "mcp_server"]
DataPolicy = specs.DataPolicy
OpenRouterRouting = specs.OpenRouterRouting
ProviderCapabilitiesSpec = specs.ProviderCapabilitiesSpec
ProviderLimits = specs.ProviderLimits
ProviderSpec = specs.ProviderSpec
PiiPolicy = specs.PiiPolicy
TrustPolicy = specs.TrustPolicy
ProjectPolicies = specs.ProjectPolicies
Rename = specs.Rename
ResearchSettings = specs.ResearchSettings
ProjectSpec = specs.ProjectSpec

# --- findings: the files pytest-aqven writes (the seeds' format); AQVEN's keys are typed, ours kept --------
UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
SHA256_PATTERN = r"^sha256-[0-9a-f]{64}$"


class _FindingPart(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)


class FindingEstimate(_FindingPart):
    value: float | None
    low: float | None
    high: float | None
    method: str | None
    p_value: float | None = None
    p_adjusted: float | None = None
    cases: int = Field(ge=0)
    attempts: int = Field(ge=0)


class FindingCell(_FindingPart):
    metric: str
    role: Literal["primary", "guardrail"]
    variant: str
    baseline: str | None = None
    direction: Literal["higher_is_better", "lower_is_better"]
    bound: Literal["above", "below"] | None = None
    threshold: float | None = None
    margin: float
    relative: bool = False
    estimate: FindingEstimate
    verdict: Literal["pass", "fail", "unclear", "reference", "none"]


class FindingChange(_FindingPart):
    """One value of the factor a variant sets: `what` (agent, prompt, use, flow) on node `node_id`."""
    node_id: str
    what: Literal["agent", "prompt", "use", "flow"]
    value: str


class FindingVariant(_FindingPart):
    id: str
    changes: list[FindingChange] | None = None
    agents: dict[str, str] | None = None
    models: list[str]
    flow_hash: str | None = None
    metrics: dict[str, FindingEstimate]


class FindingJudge(_FindingPart):
    check: str
    inference: str
    agent: str
    validated_by: str | None = None


class FindingScope(_FindingPart):
    split: Literal["holdout"]
    dataset: str
    tags: dict[str, str] | None = None
    cases: int = Field(ge=1)
    repeats: int = Field(ge=1)
    attempts: int = Field(ge=1)
    infra_errors: int = Field(ge=0)
    holdout_looks: int = Field(ge=1)
    case_names_sha256: str
    started_at: str
    finished_at: str
    engine_version: str


class FindingInputs(_FindingPart):
    experiment_sha256: str
    dataset_sha256: str
    cases_sha256: str
    code_sha256: str
    judges: dict[str, str] = {}


class FindingSpec(_FindingPart):
    """A finding file (experiments/<id>/findings/<series>.yaml): the verdict of one held-out series."""
    api_version: Literal["aqven/v1"] = Field(alias="apiVersion")
    kind: Literal["Finding"]
    experiment: str
    series: str = Field(pattern=UUID_PATTERN)
    description: str
    failure_mode: str | None = None
    question: Literal["threshold", "compare", "noninferior"]
    state: Literal["confirmed", "refuted", "inconclusive", "invalid", "signal"]
    reason: str | None = None
    statement: str
    cells: list[FindingCell] = Field(min_length=1)
    variants: list[FindingVariant] = Field(min_length=1)
    judges: list[FindingJudge] = []
    scope: FindingScope
    inputs: FindingInputs
    spend_usd: Decimal
    self_sha256: str = Field(pattern=SHA256_PATTERN)


# --- one adapter per file kind --------------------------------------------------------------------
SpecDocument = Union[ProjectSpec, RecordType, EnumType, UnionType, IdType, ValueType, FlowSpec, LlmNodeSpec,
                     CodeNodeSpec, ToolNodeSpec, HumanNodeSpec, ParallelNodeSpec, MapNodeSpec, SwitchNodeSpec,
                     LoopNodeSpec, CallNodeSpec, NarrowNodeSpec, DatasetFile, ExperimentSpec, InferenceSpec,
                     AgentSpec, ToolSpec, McpServerSpec, FindingSpec]
SPEC_MODEL_BY_KIND: dict[SpecKind, TypeAdapter[Any]] = {      # each kind's own model
    SpecKind.PROJECT: TypeAdapter(ProjectSpec), SpecKind.TYPE: TypeAdapter(TypeSpec),
    SpecKind.FLOW: TypeAdapter(FlowSpec), SpecKind.NODE: TypeAdapter(NodeSpec),
    SpecKind.DATASET: TypeAdapter(DatasetFile), SpecKind.EXPERIMENT: TypeAdapter(ExperimentSpec),
    SpecKind.INFERENCE: TypeAdapter(InferenceSpec), SpecKind.AGENT: TypeAdapter(AgentSpec),
    SpecKind.TOOL: TypeAdapter(ToolSpec), SpecKind.MCP_SERVER: TypeAdapter(McpServerSpec),
    SpecKind.FINDING: TypeAdapter(FindingSpec),
}
