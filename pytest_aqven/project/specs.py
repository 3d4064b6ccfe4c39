"""The AQVEN file formats as strict pydantic models (unknown keys are errors, as in AQVEN)."""
from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

Name = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,62}$")]
Ref = Annotated[str, Field(pattern=r"^\$")]
TypeRef = Annotated[str, Field(min_length=1)]
Description = Annotated[str, Field(min_length=1)]
ApiVersion = Literal["aqven/v1"]


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


# --- aqven.yaml -------------------------------------------------------------------------------

class DataPolicy(Spec):
    allows_pii: bool
    allows_sensitive: bool
    retention: Literal["zero", "logged", "unknown"]


class ProviderLimits(Spec):
    rpm: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=1)


class ProviderSpec(Spec):
    id: Name
    kind: Literal["catalog", "code", "openai_compatible"] = "catalog"
    api_key: str | None = None
    run: str | None = None
    base_url: str | None = None
    params: dict[str, Any] = {}
    data_policy: DataPolicy
    routing: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    limits: ProviderLimits | None = None

    @model_validator(mode="after")
    def _kind_fields(self):
        if self.kind == "code" and not self.run:
            raise ValueError("a provider of kind code needs run: \"<module>:<function>\"")
        if self.kind == "openai_compatible" and not self.base_url:
            raise ValueError("a provider of kind openai_compatible needs base_url")
        return self


class ResearchSettings(Spec):
    spend_cap_usd: Decimal = Field(default=Decimal("1.00"), ge=0)


class ProjectSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Project"]
    description: Description
    package: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    providers: Annotated[list[ProviderSpec], Field(min_length=1)]
    policies: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None
    renames: list[dict[str, Any]] = []
    research: ResearchSettings = ResearchSettings()


# --- types/ -----------------------------------------------------------------------------------

class FieldDecl(Spec):
    name: Name
    type: TypeRef
    description: str | None = None
    max_length: int | None = Field(default=None, alias="maxLength", ge=0)
    max_items: int | None = Field(default=None, alias="maxItems", ge=0)
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    enum: list[Any] | None = None


class EnumValue(Spec):
    value: str
    description: str | None = None


class RecordTypeSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Type"]
    type: Literal["record"]
    description: Description
    fields: Annotated[list[FieldDecl], Field(min_length=1)]
    pii: Literal["none", "pii", "sensitive"] | None = None


class EnumTypeSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Type"]
    type: Literal["enum"]
    description: Description
    values: Annotated[list[EnumValue], Field(min_length=1)]


class ValueTypeSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Type"]
    type: Literal["value"]
    description: Description
    base: Literal["Text", "Int", "Float", "Bool", "Date", "DateTime"]
    max_length: int | None = Field(default=None, alias="maxLength", ge=0)
    minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None


TypeSpec = Annotated[Union[RecordTypeSpec, EnumTypeSpec, ValueTypeSpec], Field(discriminator="type")]


# --- agents/ ----------------------------------------------------------------------------------

class AgentSettings(Spec):
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    seed: int | None = None
    provider_options: dict[str, Any] = {}


class AgentOutput(Spec):
    mode: Literal["auto", "tool", "native", "prompted"] = "auto"
    strict: bool = True
    retries: int = Field(default=1, ge=0, le=5)
    on_error: Literal["fail", "retry", "fallback"] = "retry"
    on_refusal: Literal["fail", "retry", "fallback"] = "fail"
    on_truncated: Literal["fail", "retry", "fallback"] = "fail"


class AgentSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Agent"]
    description: Description
    model: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*:.+$")]
    fallback_models: list[str] = []
    settings: AgentSettings = AgentSettings()
    output: AgentOutput = AgentOutput()
    instructions: str | None = None
    limits: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None

    @property
    def provider_id(self) -> str:
        return self.model.split(":", 1)[0]

    @property
    def model_name(self) -> str:
        return self.model.split(":", 1)[1]


# --- datasets/ --------------------------------------------------------------------------------

class CaseSpec(Spec):
    name: Annotated[str, Field(min_length=1)]
    inputs: Any
    context: dict[str, Any] = {}
    node_outputs: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    tags: dict[str, str] = {}
    expected_output: Any = None


class DatasetSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Dataset"]
    flow: Name | None = None
    cases: Annotated[list[CaseSpec], Field(min_length=1)]


# --- flows and nodes --------------------------------------------------------------------------

class Binding(Spec):
    name: Name
    from_: Ref | None = Field(default=None, alias="from")
    value: Any = None

    @model_validator(mode="after")
    def _one_source(self):
        if (self.from_ is None) == ("value" not in self.model_fields_set):
            raise ValueError("a binding sets exactly one of from and value")
        return self


class InputField(Binding):
    type: TypeRef | None = None
    description: str | None = None


class OutputField(FieldDecl):
    pass


class BoundField(FieldDecl):
    from_: Ref = Field(alias="from")


class FlowSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Flow"]
    description: Description
    input: TypeRef
    output: TypeRef
    returns: Annotated[list[Binding], Field(min_length=1)]
    order: Annotated[list[Name], Field(min_length=1)]
    context: list[Literal["date", "time_zone", "locale", "tenant_id"]] = []
    limits: dict[str, Any] | None = None
    requires: list[dict[str, Any]] = []


class PolicyRef(Spec):
    use: Name | None = None
    run: str | None = None
    with_: dict[str, Any] = Field(default={}, alias="with")

    @model_validator(mode="after")
    def _one_source(self):
        if (self.use is None) == (self.run is None):
            raise ValueError("a policy sets exactly one of use and run")
        return self


class NodeBase(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Node"]
    description: Description
    limits: dict[str, Any] | None = None


class LlmNode(NodeBase):
    node: Literal["llm"]
    agent: Name
    inference: Name | None = None
    in_: list[Binding] = Field(default=[], alias="in")


class CodeNode(NodeBase):
    node: Literal["code"]
    run: Annotated[str, Field(min_length=1)]
    in_: list[InputField] = Field(default=[], alias="in")
    out: Annotated[list[OutputField], Field(min_length=1)]


class CallNode(NodeBase):
    node: Literal["call"]
    flow: Name
    in_: list[Binding] = Field(default=[], alias="in")


class LoopNode(NodeBase):
    node: Literal["loop"]
    body: Annotated[list[Name], Field(min_length=1)]
    init: dict[Name, list[Binding]] = {}
    max_iter: int = Field(ge=1, le=50)
    stop: list[PolicyRef] = []
    select: PolicyRef = PolicyRef(use="last")
    out: Annotated[list[BoundField], Field(min_length=1)]


class ParallelNode(NodeBase):
    node: Literal["parallel"]
    body: Annotated[dict[Name, Name], Field(min_length=1)]
    join: PolicyRef = PolicyRef(use="all")
    out: Annotated[list[BoundField], Field(min_length=1)]


class MapNode(NodeBase):
    node: Literal["map"]
    over: Ref
    body: Name
    concurrency: int | None = Field(default=None, ge=1)
    on_item_error: PolicyRef = PolicyRef(use="fail")
    out: Annotated[list[BoundField], Field(min_length=1)]


class SwitchCase(Spec):
    node: Name | None = None
    bind: list[Binding] = []


class SwitchNode(NodeBase):
    node: Literal["switch"]
    on: Ref
    cases: Annotated[dict[str, SwitchCase], Field(min_length=1)]
    out: Annotated[list[FieldDecl], Field(min_length=1)]


class UnsupportedNode(NodeBase):
    """tool, human and narrow nodes: recognised so the checker can name them, never run."""
    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)
    node: Literal["tool", "human", "narrow"]


NodeSpec = Annotated[
    Union[LlmNode, CodeNode, CallNode, LoopNode, ParallelNode, MapNode, SwitchNode, UnsupportedNode],
    Field(discriminator="node"),
]


class InferenceCheck(Spec):
    use: Name | None = None
    run: str | None = None
    inference: Name | None = None
    agent: Name | None = None
    with_: dict[str, Any] = Field(default={}, alias="with")
    on_fail: Literal["retry", "fail", "flag"]
    threshold: float | None = None


class InferenceSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Inference"]
    description: Description
    in_: list[FieldDecl] = Field(default=[], alias="in")
    out: Annotated[list[OutputField], Field(min_length=1)]
    prompt: str | None = None
    checks: list[InferenceCheck] = []
    examples: list[dict[str, Any]] = []


# --- experiments ------------------------------------------------------------------------------

SERIES_METRICS = ("success_rate", "cost_usd", "cost_of_pass", "latency_p50_ms", "latency_p95_ms",
                  "schema_valid_first_try", "infra_error_rate")
Direction = Literal["higher_is_better", "lower_is_better"]


class Subject(Spec):
    flow: Name
    from_: Name | None = Field(default=None, alias="from")
    to: Name | None = None

    @model_validator(mode="after")
    def _both_or_neither(self):
        if (self.from_ is None) != (self.to is None):
            raise ValueError("a range sets both from and to")
        return self


class Varies(Spec):
    what: Literal["agent", "prompt", "use", "flow"]
    nodes: Annotated[list[Name], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique(self):
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError("varies.nodes names every node once")
        return self


class CaseSelection(Spec):
    dataset: Name
    tags: dict[Name, str] = {}


class VariantSpec(Spec):
    id: Name
    nodes: dict[Name, Name] = {}


class ExperimentCheck(Spec):
    id: Name
    kind: Literal["binary", "ordinal", "continuous"]
    use: Name | None = None
    run: str | None = None
    inference: Name | None = None
    agent: Name | None = None
    with_: dict[str, Any] | None = Field(default=None, alias="with")
    validated_by: Name | None = None

    @model_validator(mode="after")
    def _one_source(self):
        judge = self.inference is not None or self.agent is not None
        sources = sum([self.use is not None, self.run is not None, judge])
        if sources != 1:
            raise ValueError("a check sets exactly one of use, run, or inference with agent")
        if judge and (self.inference is None or self.agent is None):
            raise ValueError("a judge check sets both inference and agent")
        if judge and self.with_ is not None:
            raise ValueError("judge inputs bind by name to the in and out of the evaluated inference")
        if self.validated_by is not None and not judge:
            raise ValueError("validated_by applies to a judge check (inference with agent) only")
        return self

    @property
    def is_judge(self) -> bool:
        return self.inference is not None


class LookQuestion(Spec):
    kind: Literal["look"]


class ThresholdQuestion(Spec):
    kind: Literal["threshold"]
    metric: Name
    variant: Name | None = None
    above: float | None = None
    below: float | None = None
    margin: float = Field(default=0.0, ge=0)
    direction: Direction | None = None

    @model_validator(mode="after")
    def _one_bound(self):
        if (self.above is None) == (self.below is None):
            raise ValueError("set exactly one of above and below")
        return self


class GuardrailSpec(Spec):
    metric: Name
    direction: Direction | None = None
    margin: float = Field(ge=0)
    relative: bool = False


class CompareQuestion(Spec):
    kind: Literal["compare"]
    baseline: Name
    candidate: Name
    primary: Name
    direction: Direction | None = None
    margin: float = Field(default=0.0, ge=0)
    guardrails: list[GuardrailSpec] = []

    @model_validator(mode="after")
    def _differ(self):
        if self.baseline == self.candidate:
            raise ValueError("baseline and candidate must differ")
        return self


class NoninferiorQuestion(CompareQuestion):
    kind: Literal["noninferior"]
    margin: float = Field(gt=0)


Question = Annotated[Union[LookQuestion, ThresholdQuestion, CompareQuestion, NoninferiorQuestion],
                     Field(discriminator="kind")]


class Plan(Spec):
    cases: int | None = Field(default=None, ge=1)
    repeats: int = Field(default=1, ge=1, le=20)


class ExperimentSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Experiment"]
    description: Description
    failure_mode: Name | None = None
    archived: bool = False
    subject: Subject
    varies: Varies | None = None
    cases: CaseSelection
    variants: Annotated[list[VariantSpec], Field(min_length=1)]
    checks: list[ExperimentCheck] = []
    question: Question
    plan: Plan = Plan()
    cap_usd: Decimal | None = Field(default=None, gt=0)     # this experiment's series cap (seeds: explicit cap)
