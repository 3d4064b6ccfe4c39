"""`aqven.runtime`: every public name of AQVEN's `aqven.runtime` (docs/compat.md says where AQVEN
defines each and what stands behind it here)."""
from __future__ import annotations

from .address import (
    ClientOpId, ExecutionAddress, JsonObject, Problem, RequestModel, ResourceModel, RunId, node_address,
)
from .vocabulary import (
    AttemptAction, AttemptCauseKind, CallOutcome, CostSource, ExecutionStatus, FinishedExecutionStatus,
    ForkBase, IncludePayloads, LineageRelation, MODEL_OUTPUT_ERROR_CODES, ModelOutputErrorCode, OnTimeoutAction,
    PromptPartKind, PromptRole, PromptSource, ResolvedOutputMode, ResumeOutcome, RunMode, RunStatus, SpecOrigin,
    TerminalRunStatus, WaitKind, WaitState,
)
from .values import (
    BlobUploaded, BlobValue, InlineValue, ValueRef,
)
from .executions import (
    Attempt, AttemptCause, CheckOutcome, ExecutionDetail, ModelErrorDetails, NodeExecution, PromptPart,
    PromptTrace, PromptTraceMessage, ResponseTrace, RunError, SlotProvenance, SlotRange,
)
from .human import (
    HumanWait, HumanWaitAttempt, HumanWaitDetail, IgnoredAnswer, ResumeRequest, ResumeResult, ScriptedAnswer,
    ToolApprovalDecision,
)
from .events import (
    InferenceInputCaptured, LoopExited, LoopIterationFinished, NodeAnswerIgnored, NodeAttemptDiscarded,
    NodeAttemptFailed, NodeFinished, NodeOutputDelta, NodeProgress, NodeResumed, NodeStarted, NodeSuspended,
    NodeWaitEscalated, NodeWaitTimedOut, OUTPUT_DELTA_BATCH_MS, OutputPartKind, RUN_EVENT_ADAPTER,
    RUN_EVENT_TYPES, RunEvent, RunEventBase, RunEventType, RunFinished, RunResumed, RunStartedEvent,
    RunSuspended,
)
from .overrides import (
    NodeOutputError, NodeOutputOverride, OVERRIDE_CODE, node_failure, node_output, override_for,
)
from .replay import (
    McpToolStub, ProviderFault, ProviderFaultKind, ToolReplayMiss,
)
from .options import (
    CapabilityRoute, CassetteConfig, CassetteMode, ModelCall, ModelProfile, ModelRoute, RunContext, RunOptions,
    RunResult,
)
from .runs import (
    CancelRequest, CancelResult, ForkOverrides, ForkRequest, HumanAnswerStatus, Lineage, NodeCounts, Page,
    RunForked, RunInputConflict, RunSnapshot, RunStartRequest, RunStarted, RunSummary, SpecVersionInfo,
)
from .steps import (
    BlobStore, JobDone, JobFailed, JobHandle, JobPending, JobPoll, ToolContext,
)
from .project import (
    FlowHandle, FlowNotFound, FlowSignatureMismatch, PackageNotOnDisk, Project, ProjectInvalid, Run,
)

__all__ = [
    "Attempt", "AttemptAction", "AttemptCause", "AttemptCauseKind", "BlobStore", "BlobUploaded", "BlobValue",
    "CallOutcome", "CancelRequest", "CancelResult", "CapabilityRoute", "CassetteConfig", "CassetteMode",
    "CheckOutcome", "ClientOpId", "CostSource", "ExecutionAddress", "ExecutionDetail", "ExecutionStatus",
    "FinishedExecutionStatus", "FlowHandle", "FlowNotFound", "FlowSignatureMismatch", "ForkBase",
    "ForkOverrides", "ForkRequest", "HumanAnswerStatus", "HumanWait", "HumanWaitAttempt", "HumanWaitDetail",
    "IgnoredAnswer", "IncludePayloads", "InferenceInputCaptured", "InlineValue", "JobDone", "JobFailed",
    "JobHandle", "JobPending", "JobPoll", "JsonObject", "Lineage", "LineageRelation", "LoopExited",
    "LoopIterationFinished", "MODEL_OUTPUT_ERROR_CODES", "McpToolStub", "ModelCall", "ModelErrorDetails",
    "ModelOutputErrorCode", "ModelProfile", "ModelRoute", "NodeAnswerIgnored", "NodeAttemptDiscarded",
    "NodeAttemptFailed", "NodeCounts", "NodeExecution", "NodeFinished", "NodeOutputDelta", "NodeOutputError",
    "NodeOutputOverride", "NodeProgress", "NodeResumed", "NodeStarted", "NodeSuspended", "NodeWaitEscalated",
    "NodeWaitTimedOut", "OUTPUT_DELTA_BATCH_MS", "OVERRIDE_CODE", "OnTimeoutAction", "OutputPartKind",
    "PackageNotOnDisk", "Page", "Problem", "Project", "ProjectInvalid", "PromptPart", "PromptPartKind",
    "PromptRole", "PromptSource", "PromptTrace", "PromptTraceMessage", "ProviderFault", "ProviderFaultKind",
    "RUN_EVENT_ADAPTER", "RUN_EVENT_TYPES", "RequestModel", "ResolvedOutputMode", "ResourceModel",
    "ResponseTrace", "ResumeOutcome", "ResumeRequest", "ResumeResult", "Run", "RunContext", "RunError",
    "RunEvent", "RunEventBase", "RunEventType", "RunFinished", "RunForked", "RunId", "RunInputConflict",
    "RunMode", "RunOptions", "RunResult", "RunResumed", "RunSnapshot", "RunStartRequest", "RunStarted",
    "RunStartedEvent", "RunStatus", "RunSummary", "RunSuspended", "ScriptedAnswer", "SlotProvenance",
    "SlotRange", "SpecOrigin", "SpecVersionInfo", "TerminalRunStatus", "ToolApprovalDecision", "ToolContext",
    "ToolReplayMiss", "ValueRef", "WaitKind", "WaitState", "node_address", "node_failure", "node_output",
    "override_for",
]
