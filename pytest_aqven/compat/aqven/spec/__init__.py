"""`aqven.spec`: every public name of AQVEN's `aqven.spec` (docs/compat.md says where AQVEN defines
each and what stands behind it here)."""
from __future__ import annotations

# AQVEN has modules named flow and tool beside the builder functions of those names: imported first, the
# names stay the functions (as in AQVEN, where the modules load before the builder's names are bound)
from . import flow as _flow_module, tool as _tool_module  # noqa: F401  isort: skip
from .names import (
    API_VERSION, AgentId, ArmId, BLOB_ID_PATTERN, BlobId, CODE_ALIAS_BODY, CODE_FILE_PATTERN, CODE_REF_PATTERN,
    CellVerdict, CodeRef, DatasetId, Effect, ExperimentId, FUNCTION_BODY, FactorKind, FlowId,
    INSTRUCTIONS_PATTERN, InferenceId, Locale, LoopStopReason, MODEL_PATTERN, McpServerId, MetricDirection,
    MetricKind, Modality, ModelFamily, ModelString, NAME_PATTERN, NodeId, NodeKind, OnFail, OutcomePolicy,
    PROMPT_REF_PATTERN, PROVIDER_NAME_PATTERN, PiiClass, PiiDetector, PromptLevel, ProviderName, REF_PATTERN,
    Retention, RunContextKey, SECRET_REF_PATTERN, SecretRef, SeriesMetric, SeriesSplit, SpecKind, TEXT_SUFFIX,
    TYPE_REF_PATTERN, TenantId, TimeZone, ToolId, TrustLevel, TypeId, TypeKind, VARIANT_REF_PATTERN, VariantId,
    VerdictReason, VerdictState,
)
from .builtins import (
    ALWAYS_BOUNDED_TYPES, AUDIO, Audio, BOOL, BUILTIN_TYPE_IDS, CONTEXT_TYPES, DATE, DATE_TIME, DOCUMENT,
    DYNAMIC, DYNAMIC_TYPES, Document, DynamicLimits, DynamicValue, FIELD_SPEC, FLOAT, FieldSpec, IMAGE, INT,
    Image, LOCALE, MAP_ITEM_ERROR, MEDIA_MODALITY, MEDIA_TYPES, MapItemError, MediaValue, RECORD_LABEL,
    SCALAR_TYPES, TENANT_ID, TEXT, TIME_ZONE, VIDEO, Video,
)
from .refs import (
    FieldStep, IndexStep, LiftStep, Ref, RefRoot, RefStep, RefSyntaxError, parse_ref,
)
from .typeref import (
    TypeRef, TypeRefSyntaxError, parse_type_ref,
)
from .prompts import (
    PromptMessage, PromptRole, RenderedPrompt, assistant, system, user,
)
from .models import (
    AgentOutputSpec, AgentSpec, AllowedSetMode, AllowedSetSpec, BoundField, CallNodeSpec, CapabilityOverride,
    CaseSelection, CheckSpec, CodeFormat, CodeNodeSpec, CompareQuestion, Constraints, ContractPredicate,
    DataPolicy, DatasetCase, DatasetFile, DefaultOnTimeout, DisplayFormatterSpec, EnumType, EnumValue,
    EscalateOnTimeout, EvaluatorRef, ExampleSpec, ExperimentCheck, ExperimentPlan, ExperimentSpec,
    ExperimentSubject, FailOnTimeout, FamiliesDistinct, FamilyDisjointFromInput, FieldBefore, FieldBinding,
    FieldDecl, FieldHead, FindingCell, FindingChange, FindingEstimate, FindingInputs, FindingJudge,
    FindingScope, FindingSpec, FindingVariant, FlowSpec, Guardrail, HumanNodeSpec, IdType, InferenceDisplaySpec,
    InferenceSpec, InputField, JobWaitSpec, Limits, LlmNodeSpec, LookQuestion, LoopNodeSpec, MapNodeSpec,
    McpServerSpec, McpToolSource, ModelSettingsSpec, NODE_SPEC_CLASSES, NarrowNodeSpec, NodeBase, NodeHeader,
    NodeSpec, NodeTag, NoninferiorQuestion, OpenRouterRouting, OutputField, OutputModeSetting, OutputModeSource,
    ParallelNodeSpec, PiiPolicy, PolicyRef, ProjectPolicies, ProjectSpec, ProviderCapabilitiesSpec,
    ProviderKind, ProviderLimits, ProviderNameField, ProviderSpec, Question, RecordType, Rename, RenameKind,
    ResearchSettings, SHA256_PATTERN, SPEC_MODEL_BY_KIND, SecretBinding, SecretHeader, SpecDocument, SpecModel,
    StructuredMode, SubagentSpec, SwitchCase, SwitchNodeSpec, ThresholdQuestion, TimeoutPolicy,
    ToolApprovalSpec, ToolNodeSpec, ToolSpec, TrustPolicy, TypeHeader, TypeSpec, UNSUPPORTED_NODE_KINDS,
    UUID_PATTERN, UnionType, UnionVariant, ValueBase, ValueHead, ValueType, VariantRef, VariantSlot,
    VariantSpec, inner_nodes,
)
from .modelgen import (
    BUILTIN_ANNOTATIONS, FieldSpecTypeIssue, FieldSpecTypeProblem, GENERATED_CONFIG, ItemConstraints,
    TypeModelError, TypeModels, annotated_record, build_type_models, dynamic_record, field_annotation,
    field_spec_type_problem, normalized_schema, overridden_model, record_model,
)
from .builder import (
    BuilderError, BuiltNode, CodeNode, Flow, In, Inference, LlmNode, Out, ToolNode, code, describe_annotation,
    flow, inference_spec, llm, tool,
)
from .profiles import (
    MODEL_PROFILES, ModelProfile, ModelRef, ModelSyntaxError, PROVIDER_FAMILIES, VENDOR_FAMILIES, parse_model,
    resolve_profile,
)
from .schema import (
    SCHEMA_DIALECT, editor_schema, schema_path, write_editor_schemas,
)

__all__ = [
    "ALWAYS_BOUNDED_TYPES", "API_VERSION", "AUDIO", "AgentId", "AgentOutputSpec", "AgentSpec", "AllowedSetMode",
    "AllowedSetSpec", "ArmId", "Audio", "BLOB_ID_PATTERN", "BOOL", "BUILTIN_ANNOTATIONS", "BUILTIN_TYPE_IDS",
    "BlobId", "BoundField", "BuilderError", "BuiltNode", "CODE_ALIAS_BODY", "CODE_FILE_PATTERN",
    "CODE_REF_PATTERN", "CONTEXT_TYPES", "CallNodeSpec", "CapabilityOverride", "CaseSelection", "CellVerdict",
    "CheckSpec", "CodeFormat", "CodeNode", "CodeNodeSpec", "CodeRef", "CompareQuestion", "Constraints",
    "ContractPredicate", "DATE", "DATE_TIME", "DOCUMENT", "DYNAMIC", "DYNAMIC_TYPES", "DataPolicy",
    "DatasetCase", "DatasetFile", "DatasetId", "DefaultOnTimeout", "DisplayFormatterSpec", "Document",
    "DynamicLimits", "DynamicValue", "Effect", "EnumType", "EnumValue", "EscalateOnTimeout", "EvaluatorRef",
    "ExampleSpec", "ExperimentCheck", "ExperimentId", "ExperimentPlan", "ExperimentSpec", "ExperimentSubject",
    "FIELD_SPEC", "FLOAT", "FUNCTION_BODY", "FactorKind", "FailOnTimeout", "FamiliesDistinct",
    "FamilyDisjointFromInput", "FieldBefore", "FieldBinding", "FieldDecl", "FieldHead", "FieldSpec",
    "FieldSpecTypeIssue", "FieldSpecTypeProblem", "FieldStep", "FindingCell", "FindingChange",
    "FindingEstimate", "FindingInputs", "FindingJudge", "FindingScope", "FindingSpec", "FindingVariant", "Flow",
    "FlowId", "FlowSpec", "GENERATED_CONFIG", "Guardrail", "HumanNodeSpec", "IMAGE", "INSTRUCTIONS_PATTERN",
    "INT", "IdType", "Image", "In", "IndexStep", "Inference", "InferenceDisplaySpec", "InferenceId",
    "InferenceSpec", "InputField", "ItemConstraints", "JobWaitSpec", "LOCALE", "LiftStep", "Limits", "LlmNode",
    "LlmNodeSpec", "Locale", "LookQuestion", "LoopNodeSpec", "LoopStopReason", "MAP_ITEM_ERROR",
    "MEDIA_MODALITY", "MEDIA_TYPES", "MODEL_PATTERN", "MODEL_PROFILES", "MapItemError", "MapNodeSpec",
    "McpServerId", "McpServerSpec", "McpToolSource", "MediaValue", "MetricDirection", "MetricKind", "Modality",
    "ModelFamily", "ModelProfile", "ModelRef", "ModelSettingsSpec", "ModelString", "ModelSyntaxError",
    "NAME_PATTERN", "NODE_SPEC_CLASSES", "NarrowNodeSpec", "NodeBase", "NodeHeader", "NodeId", "NodeKind",
    "NodeSpec", "NodeTag", "NoninferiorQuestion", "OnFail", "OpenRouterRouting", "Out", "OutcomePolicy",
    "OutputField", "OutputModeSetting", "OutputModeSource", "PROMPT_REF_PATTERN", "PROVIDER_FAMILIES",
    "PROVIDER_NAME_PATTERN", "ParallelNodeSpec", "PiiClass", "PiiDetector", "PiiPolicy", "PolicyRef",
    "ProjectPolicies", "ProjectSpec", "PromptLevel", "PromptMessage", "PromptRole", "ProviderCapabilitiesSpec",
    "ProviderKind", "ProviderLimits", "ProviderName", "ProviderNameField", "ProviderSpec", "Question",
    "RECORD_LABEL", "REF_PATTERN", "RecordType", "Ref", "RefRoot", "RefStep", "RefSyntaxError", "Rename",
    "RenameKind", "RenderedPrompt", "ResearchSettings", "Retention", "RunContextKey", "SCALAR_TYPES",
    "SCHEMA_DIALECT", "SECRET_REF_PATTERN", "SHA256_PATTERN", "SPEC_MODEL_BY_KIND", "SecretBinding",
    "SecretHeader", "SecretRef", "SeriesMetric", "SeriesSplit", "SpecDocument", "SpecKind", "SpecModel",
    "StructuredMode", "SubagentSpec", "SwitchCase", "SwitchNodeSpec", "TENANT_ID", "TEXT", "TEXT_SUFFIX",
    "TIME_ZONE", "TYPE_REF_PATTERN", "TenantId", "ThresholdQuestion", "TimeZone", "TimeoutPolicy",
    "ToolApprovalSpec", "ToolId", "ToolNode", "ToolNodeSpec", "ToolSpec", "TrustLevel", "TrustPolicy",
    "TypeHeader", "TypeId", "TypeKind", "TypeModelError", "TypeModels", "TypeRef", "TypeRefSyntaxError",
    "TypeSpec", "UNSUPPORTED_NODE_KINDS", "UUID_PATTERN", "UnionType", "UnionVariant", "VARIANT_REF_PATTERN",
    "VENDOR_FAMILIES", "VIDEO", "ValueBase", "ValueHead", "ValueType", "VariantId", "VariantRef", "VariantSlot",
    "VariantSpec", "VerdictReason", "VerdictState", "Video", "annotated_record", "assistant",
    "build_type_models", "code", "describe_annotation", "dynamic_record", "editor_schema", "field_annotation",
    "field_spec_type_problem", "flow", "inference_spec", "inner_nodes", "llm", "normalized_schema",
    "overridden_model", "parse_model", "parse_ref", "parse_type_ref", "record_model", "resolve_profile",
    "schema_path", "system", "tool", "user", "write_editor_schemas",
]
