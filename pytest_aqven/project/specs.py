"""The AQVEN file formats as strict pydantic models (unknown keys are errors, as in AQVEN)."""
from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, Self, Union

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


class OpenRouterRouting(Spec):
    data_collection: Literal["allow", "deny"]
    zdr: bool


Modality = Literal["text", "image", "audio", "video", "document"]


class ProviderCapabilitiesSpec(Spec):
    input: list[Modality] | None = None
    output: list[Modality] | None = None
    tools: bool | None = None
    json_schema_output: bool | None = None


class ProviderSpec(Spec):
    id: Name
    kind: Literal["catalog", "code", "openai_compatible"] = "catalog"
    api_key: str | None = None
    run: str | None = None
    base_url: str | None = None
    params: dict[str, Any] = {}
    data_policy: DataPolicy
    routing: OpenRouterRouting | None = None
    capabilities: ProviderCapabilitiesSpec | None = None
    limits: ProviderLimits | None = None
    on_rate_limit: Literal["auto", "fixed", "fail"] = "auto"     # what a 429 does (AQVEN's provider keys)
    retry_wait_seconds: float | None = Field(default=None, gt=0)  # fixed: the wait before each retry (10)
    retry_attempts: int | None = Field(default=None, ge=0)        # fixed: retries of a rate-limited call (5)

    @model_validator(mode="after")
    def _kind_fields(self) -> Self:
        if self.kind == "code" and not self.run:
            raise ValueError("a provider of kind code needs run: \"<module>:<function>\"")
        if self.kind == "openai_compatible" and not self.base_url:
            raise ValueError("a provider of kind openai_compatible needs base_url")
        return self


class ResearchSettings(Spec):
    spend_cap_usd: Decimal = Field(default=Decimal("1.00"), ge=0)


class Limits(Spec):
    requests: int | None = Field(default=None, ge=1)
    tool_calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=1)
    usd_micros: int | None = Field(default=None, ge=0)
    seconds: float | None = Field(default=None, gt=0)     # AQVEN writes whole seconds; tests use fractions


PiiDetector = Literal["email", "phone", "card_number", "iban", "ip_address"]


class PiiPolicy(Spec):
    mask_in_traces: bool
    redact: list[PiiDetector]


class TrustPolicy(Spec):
    default_in: Literal["trusted", "untrusted"]


class ProjectPolicies(Spec):
    pii: PiiPolicy | None = None
    trust: TrustPolicy | None = None


class Rename(Spec):
    """A renamed id, so history (series, findings) follows it: node ids read `<flow>.<node>`."""
    kind: Literal["flow", "node", "type", "prompt", "dataset", "field", "inference", "agent", "tool", "mcp_server"]
    from_: Annotated[str, Field(min_length=1)] = Field(alias="from")
    to: Annotated[str, Field(min_length=1)]
    at: datetime


class ProjectSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Project"]
    description: Description
    package: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    providers: Annotated[list[ProviderSpec], Field(min_length=1)]
    policies: ProjectPolicies | None = None
    limits: Limits | None = None
    renames: list[Rename] = []
    research: ResearchSettings = ResearchSettings()


# --- types/ -----------------------------------------------------------------------------------

class Constraints(Spec):
    """The JSON-schema constraints a field declaration (or a value type) may carry, enforced at run time."""
    min_length: int | None = Field(default=None, alias="minLength", ge=0)
    max_length: int | None = Field(default=None, alias="maxLength", ge=0)
    min_items: int | None = Field(default=None, alias="minItems", ge=0)
    max_items: int | None = Field(default=None, alias="maxItems", ge=0)
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = Field(default=None, alias="exclusiveMinimum")
    exclusive_maximum: float | None = Field(default=None, alias="exclusiveMaximum")
    multiple_of: float | None = Field(default=None, alias="multipleOf", gt=0)
    pattern: str | None = None
    enum: Annotated[list[Any], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _valid_pattern(self) -> Self:
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None
        for low, high in (("min_length", "max_length"), ("min_items", "max_items"), ("minimum", "maximum")):
            a, b = getattr(self, low), getattr(self, high)
            if a is not None and b is not None and a > b:
                raise ValueError(f"{low} {a} is above {high} {b}")
        return self


class FieldDecl(Constraints):
    name: Name
    type: TypeRef
    description: str | None = None


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
    pii: Literal["none", "pii", "sensitive"] | None = None


class ValueTypeSpec(Constraints):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Type"]
    type: Literal["value"]
    description: Description
    base: Literal["Text", "Int", "Float", "Bool", "Date", "DateTime"]
    pii: Literal["none", "pii", "sensitive"] | None = None


class UnionVariant(Spec):
    name: Name
    description: str | None = None
    fields: list[FieldDecl] = []


class UnionTypeSpec(Spec):
    """A tagged union: the discriminator field holds the variant's name."""
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Type"]
    type: Literal["union"]
    description: Description
    discriminator: Name
    variants: Annotated[list[UnionVariant], Field(min_length=1)]
    pii: Literal["none", "pii", "sensitive"] | None = None

    @model_validator(mode="after")
    def _variants(self) -> Self:
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError("every variant of a union has its own name")
        for v in self.variants:
            if any(f.name == self.discriminator for f in v.fields):
                raise ValueError(f"variant {v.name} declares field {self.discriminator}, the discriminator of the union")
        return self


class IdTypeSpec(Spec):
    """A string id; allowed_set dynamic: an inference restricts it to the ids present in its input."""
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Type"]
    type: Literal["id"]
    description: Description
    pattern: str | None = None
    max_length: int | None = Field(default=None, alias="maxLength", ge=1)
    allowed_set: Literal["dynamic", "none"] = "none"
    code_format: Literal["prefixed_ordinal", "identity"] | None = None
    pii: Literal["none", "pii", "sensitive"] | None = None

    @model_validator(mode="after")
    def _valid_pattern(self) -> Self:
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern {self.pattern!r} is not a regular expression: {exc}") from None
        return self


TypeSpec = Annotated[Union[RecordTypeSpec, EnumTypeSpec, ValueTypeSpec, UnionTypeSpec, IdTypeSpec],
                     Field(discriminator="type")]


# --- agents/ ----------------------------------------------------------------------------------

class AgentSettings(Spec):
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
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


class FailOnTimeout(Spec):
    policy: Literal["fail"]


class DefaultOnTimeout(Spec):
    policy: Literal["default"]
    value: Any


class EscalateOnTimeout(Spec):
    policy: Literal["escalate"]
    assignee: Annotated[str, Field(min_length=1)]
    timeout_seconds: int = Field(ge=1)


TimeoutPolicy = Annotated[Union[FailOnTimeout, DefaultOnTimeout, EscalateOnTimeout], Field(discriminator="policy")]


class Subagent(Spec):
    """An agent the parent agent may delegate to, answering with an inference of the project."""
    name: Name
    description: Description
    agent: Name
    inference: Name


class ToolApproval(Spec):
    """A person approves each call of these tools before it runs."""
    tools: Annotated[list[Name], Field(min_length=1)]
    assignee: Annotated[str, Field(min_length=1)]
    timeout_seconds: int = Field(ge=1)
    on_timeout: TimeoutPolicy


class Capabilities(Spec):
    family: Literal["openai", "anthropic", "google", "deepseek", "qwen", "moonshot", "zhipu", "xai", "meta",
                    "mistral", "other"] | None = None
    input: list[Literal["text", "image", "audio", "video", "document"]] | None = None
    output: list[Literal["text", "image", "audio", "video", "document"]] | None = None
    strict: bool | None = None


class AgentSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Agent"]
    description: Description
    model: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*:.+$")]
    fallback_models: list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*:.+$")]] = []
    settings: AgentSettings = AgentSettings()
    output: AgentOutput = AgentOutput()
    instructions: Annotated[str, Field(min_length=1)] | None = None   # text, or a file "./<name>.md" beside the agent
    tools: list[Name] = []
    mcp_servers: list[Name] = []
    subagents: list[Subagent] = []
    approval: ToolApproval | None = None
    limits: Limits | None = None
    capabilities: Capabilities | None = None

    @property
    def instructions_file(self) -> str | None:
        """The relative file the instructions name, or None for inline text."""
        text = self.instructions
        return text if text and text.startswith(("./", "../", "@root/")) and "\n" not in text else None

    @property
    def provider_id(self) -> str:
        return self.model.split(":", 1)[0]

    @property
    def model_name(self) -> str:
        return self.model.split(":", 1)[1]


# --- tools/ and mcp/ ---------------------------------------------------------------------------

class McpToolSource(Spec):
    server: Name
    tool: Annotated[str, Field(min_length=1)]


class JobWait(Spec):
    poll: Annotated[str, Field(min_length=1)]
    interval_seconds: int = Field(ge=1)
    timeout_seconds: int = Field(ge=1)


class SecretBinding(Spec):
    name: Annotated[str, Field(min_length=1)]
    ref: Annotated[str, Field(pattern=r"^ref:env/[A-Za-z_][A-Za-z0-9_]*$")]


class ToolSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Tool"]
    description: Description
    effect: Literal["read", "write", "external"]
    run: Annotated[str, Field(min_length=1)] | None = None
    mcp: McpToolSource | None = None
    idempotency_key: list[Name] = []
    secrets: list[SecretBinding] = []
    wait: JobWait | None = None
    in_: list["FieldDecl"] = Field(default=[], alias="in")
    out: list["OutputField"] = []

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.run is None) == (self.mcp is None):
            raise ValueError("a tool sets exactly one of run and mcp")
        if self.run is not None and not self.out:
            raise ValueError("a tool with run declares its out fields")
        if self.mcp is not None and (self.wait is not None or self.in_ or self.out):
            raise ValueError("an mcp tool takes its in and out from the server: remove in, out and wait")
        return self


class SecretHeader(Spec):
    name: Annotated[str, Field(min_length=1)]
    value: Annotated[str, Field(pattern=r"^ref:env/[A-Za-z_][A-Za-z0-9_]*$")]


class McpServerSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["McpServer"]
    description: Description
    transport: Literal["streamable_http", "stdio"]
    url: Annotated[str, Field(min_length=1)] | None = None
    headers: list[SecretHeader] = []
    schema_hash: str | None = None
    # stdio (pytest-aqven runs a local server per attempt): the command line, "python" meaning this Python
    command: list[Annotated[str, Field(min_length=1)]] = []
    env: dict[str, str] = {}

    @model_validator(mode="after")
    def _transport_fields(self) -> Self:
        if self.transport == "stdio" and (not self.command or self.url is not None):
            raise ValueError("a stdio server sets command (its command line) and no url")
        if self.transport == "streamable_http" and (self.url is None or self.command or self.env):
            raise ValueError("a streamable_http server sets url and no command or env")
        return self


# --- datasets/ --------------------------------------------------------------------------------

class CaseSpec(Spec):
    name: Annotated[str, Field(min_length=1)]
    inputs: Any
    # default_factory: pydantic deep-copies a {} default for every case, the most of validating a large dataset
    context: dict[str, Any] = Field(default_factory=dict)
    node_outputs: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: dict[str, str] = Field(default_factory=dict)
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
    def _one_source(self) -> Self:
        if (self.from_ is None) == ("value" not in self.model_fields_set):
            raise ValueError("a binding sets exactly one of from and value")
        return self


class InputField(Constraints):
    """A code or human node input: a binding that may declare its type and constraints."""
    name: Name
    from_: Ref | None = Field(default=None, alias="from")
    value: Any = None
    type: TypeRef | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.from_ is None) == ("value" not in self.model_fields_set):
            raise ValueError("a binding sets exactly one of from and value")
        return self


class DynamicLimits(Spec):
    max_fields: int = Field(ge=1)
    max_depth: int = Field(ge=1, le=3)
    max_text_length: int = Field(ge=1)
    max_items: int = Field(ge=1)


class OutputField(FieldDecl):
    """An output field; a Dynamic one takes its shape at run time from a FieldSpec[] input (schema_from)."""
    schema_from: Ref | None = None
    value_type: TypeRef | None = None
    limits: DynamicLimits | None = None

    @model_validator(mode="after")
    def _dynamic(self) -> Self:
        dynamic = self.type.rstrip("?") in DYNAMIC_TYPE_NAMES
        if not dynamic and (self.schema_from or self.value_type or self.limits):
            raise ValueError(f"schema_from, value_type and limits belong to a Dynamic field, not to {self.type}")
        if dynamic and self.schema_from is None:
            raise ValueError("a Dynamic output field names the FieldSpec[] that shapes it under schema_from")
        return self


DYNAMIC_TYPE_NAMES = ("Dynamic", "DynamicValue")


class BoundField(FieldDecl):
    from_: Ref = Field(alias="from")
    value_type: TypeRef | None = None


class FamiliesDistinct(Spec):
    """The nodes answer with models of at least `min` different families (a judge panel)."""
    rule: Literal["families_distinct"]
    nodes: Annotated[list[str], Field(min_length=1)]
    min: int = Field(ge=1)


class FamilyDisjointFromInput(Spec):
    """The nodes' model families differ from the family named by an input (a judge never grades its own)."""
    rule: Literal["family_disjoint_from_input"]
    nodes: Annotated[list[str], Field(min_length=1)]
    input: str


class FieldBefore(Spec):
    """The nodes' output writes field `first` before `second` (a rationale before its score)."""
    rule: Literal["field_before"]
    nodes: Annotated[list[str], Field(min_length=1)]
    first: str
    second: str


ContractPredicate = Annotated[Union[FamiliesDistinct, FamilyDisjointFromInput, FieldBefore],
                              Field(discriminator="rule")]


class FlowSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Flow"]
    description: Description
    input: TypeRef
    output: TypeRef
    returns: Annotated[list[Binding], Field(min_length=1)]
    order: Annotated[list[Name], Field(min_length=1)]
    context: list[Literal["date", "time_zone", "locale", "tenant_id"]] = []
    limits: Limits | None = None
    requires: list[ContractPredicate] = []


class PolicyRef(Spec):
    use: Name | None = None
    run: str | None = None
    with_: dict[str, Any] = Field(default={}, alias="with")

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.use is None) == (self.run is None):
            raise ValueError("a policy sets exactly one of use and run")
        return self


class NodeBase(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Node"]
    description: Description
    limits: Limits | None = None


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


class ToolNode(NodeBase):
    node: Literal["tool"]
    tool: Name
    in_: list[Binding] = Field(default=[], alias="in")


class HumanNode(NodeBase):
    """A person fills the form type; in a series the answer comes from the case."""
    node: Literal["human"]
    form: TypeRef
    assignee: Annotated[str, Field(min_length=1)]
    timeout_seconds: int = Field(ge=1)
    on_timeout: TimeoutPolicy
    in_: list[InputField] = Field(default=[], alias="in")


class NarrowNode(NodeBase):
    """Turns a Dynamic value into a value of a registry type (validated at run time)."""
    node: Literal["narrow"]
    from_: Ref = Field(alias="from")
    to: TypeRef


NodeSpec = Annotated[
    Union[LlmNode, CodeNode, CallNode, LoopNode, ParallelNode, MapNode, SwitchNode, ToolNode, HumanNode, NarrowNode],
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

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if sum(x is not None for x in (self.use, self.run, self.inference)) != 1:
            raise ValueError("a check sets exactly one of use, run, or inference with agent")
        if (self.inference is None) != (self.agent is None):
            raise ValueError("a judge check sets both inference and agent")
        return self


class DisplayFormatter(Spec):
    run: Annotated[str, Field(min_length=1)] | None = None
    template: Annotated[str, Field(pattern=r"\.display\.liquid$")] | None = None
    variables: dict[Name, Ref] = {}

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.run is None) == (self.template is None):
            raise ValueError("a display sets exactly one of run and template")
        return self


class InferenceDisplay(Spec):
    input: DisplayFormatter | None = None
    output: DisplayFormatter | None = None


class AllowedSet(Spec):
    """Restricts an id-typed output to the ids present in the input."""
    type: TypeRef
    from_: Ref = Field(alias="from")
    labels_from: Ref | None = None


class InferenceExample(Spec):
    name: Annotated[str, Field(min_length=1)]
    in_: dict[str, Any] = Field(alias="in")
    out: dict[str, Any]


VariantFile = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")]


class VariantSlot(Spec):
    """{{ variants.<slot> }}: the text of <inference>.variants/<slot>/<file>.md, picked by an input value.
    `on` is a reference ($in.product.kind) or, as AQVEN also reads it, an input path (product.kind)."""
    on: Annotated[str, Field(min_length=1)]
    cases: Annotated[dict[str, VariantFile], Field(min_length=1)]
    default: VariantFile | None = None

    @property
    def selector(self) -> str:
        """`on` as a reference: an input path reads the inference's inputs."""
        return self.on if self.on.startswith("$") else f"$in.{self.on}"


class InferenceSpec(Spec):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: Literal["Inference"]
    description: Description
    in_: list[FieldDecl] = Field(default=[], alias="in")
    out: Annotated[list[OutputField], Field(min_length=1)]
    prompt: str | None = None
    display: InferenceDisplay | None = None
    variants: dict[Name, VariantSlot] = {}
    allowed_sets: list[AllowedSet] = []
    checks: list[InferenceCheck] = []
    examples: list[InferenceExample] = []


# --- experiments ------------------------------------------------------------------------------

SERIES_METRICS = ("success_rate", "cost_usd", "cost_of_pass", "latency_p50_ms", "latency_p95_ms",
                  "schema_valid_first_try", "infra_error_rate")
Direction = Literal["higher_is_better", "lower_is_better"]
Finite = Annotated[float, Field(allow_inf_nan=False)]     # a question's numbers: NaN or infinity decide nothing


class Subject(Spec):
    flow: Name
    from_: Name | None = Field(default=None, alias="from")
    to: Name | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> Self:
        if (self.from_ is None) != (self.to is None):
            raise ValueError("a range sets both from and to")
        return self


class Varies(Spec):
    what: Literal["agent", "prompt", "use", "flow"]
    nodes: Annotated[list[Name], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique(self) -> Self:
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
    def _one_source(self) -> Self:
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
    above: Finite | None = None
    below: Finite | None = None
    margin: Finite = Field(default=0.0, ge=0)
    direction: Direction | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Self:
        if (self.above is None) == (self.below is None):
            raise ValueError("set exactly one of above and below")
        return self


class GuardrailSpec(Spec):
    metric: Name
    direction: Direction | None = None
    margin: Finite = Field(ge=0)
    relative: bool = False


class PairQuestion(Spec):
    # a question on two variants, what compare and noninferior share (neither kind is the other)
    kind: Literal["compare", "noninferior"]
    baseline: Name
    candidate: Name
    primary: Name
    direction: Direction | None = None
    margin: Finite = Field(default=0.0, ge=0)
    guardrails: list[GuardrailSpec] = []

    @model_validator(mode="after")
    def _differ(self) -> Self:
        if self.baseline == self.candidate:
            raise ValueError("baseline and candidate must differ")
        return self


class CompareQuestion(PairQuestion):
    kind: Literal["compare"]


class NoninferiorQuestion(PairQuestion):
    kind: Literal["noninferior"]
    margin: Finite = Field(gt=0)


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


ToolSpec.model_rebuild()


def children(spec: Any) -> list[tuple[tuple, str]]:
    """(key path in the node file, child id) of every node a container runs."""
    if isinstance(spec, LoopNode):
        return [(("body", i), c) for i, c in enumerate(spec.body)]
    if isinstance(spec, ParallelNode):
        return [(("body", k), c) for k, c in spec.body.items()]
    if isinstance(spec, MapNode):
        return [(("body",), spec.body)]
    if isinstance(spec, SwitchNode):
        return [(("cases", k, "node"), c.node) for k, c in spec.cases.items() if c.node is not None]
    return []
