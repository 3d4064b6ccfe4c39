"""`aqven.runtime.vocabulary`: the words of a run's record (statuses, modes, causes, outcomes)."""
from __future__ import annotations

import typing
from typing import Literal

RunStatus = Literal["queued", "running", "suspended", "completed", "failed", "cancelled"]
TerminalRunStatus = Literal["completed", "failed", "cancelled"]
RunMode = Literal["live", "replay", "experiment", "dryrun"]
ExecutionStatus = Literal["pending", "running", "ok", "failed", "skipped", "suspended", "cancelled"]
FinishedExecutionStatus = Literal["ok", "failed", "skipped", "cancelled"]
WaitKind = Literal["form", "tool_approval"]
WaitState = Literal["waiting", "resolved", "timed_out"]
OnTimeoutAction = Literal["fail", "default", "escalate"]
ResumeOutcome = Literal["accepted", "replayed", "sent"]
IncludePayloads = Literal["none", "truncated", "full"]
AttemptCauseKind = Literal["rate_limited", "schema_invalid", "truncated", "refusal", "provider_error",
                           "budget_exceeded", "cassette_miss", "invalid_json", "no_structured_output",
                           "feature_unsupported"]
AttemptAction = Literal["retry", "repair", "fallback", "none"]
CallOutcome = Literal["ok", "refusal", "truncated", "error"]
CostSource = Literal["provider", "prices", "genai", "unknown"]
LineageRelation = Literal["fork", "replay"]
SpecOrigin = Literal["working_copy", "release"]
ForkBase = Literal["original", "working"]
PromptSource = Literal["disk", "draft"]
PromptPartKind = Literal["text", "image", "audio", "video", "document"]
PromptRole = Literal["system", "user", "assistant", "tool"]
ResolvedOutputMode = Literal["tool", "native", "prompted"]
ItemRecoveryDecision = Literal["skip", "default"]
ModelOutputErrorCode = Literal["MODEL_NO_STRUCTURED_OUTPUT", "MODEL_INVALID_JSON", "MODEL_SCHEMA_MISMATCH",
                               "MODEL_FEATURE_UNSUPPORTED", "MODEL_RETRIES_EXHAUSTED", "OUTPUT_SCHEMA_REJECTED"]
MODEL_OUTPUT_ERROR_CODES = frozenset(typing.get_args(ModelOutputErrorCode))

__all__ = ["MODEL_OUTPUT_ERROR_CODES", "AttemptAction", "AttemptCauseKind", "CallOutcome", "CostSource",
           "ExecutionStatus", "FinishedExecutionStatus", "ForkBase", "IncludePayloads", "ItemRecoveryDecision",
           "LineageRelation", "ModelOutputErrorCode", "OnTimeoutAction", "PromptPartKind", "PromptRole",
           "PromptSource", "ResolvedOutputMode", "ResumeOutcome", "RunMode", "RunStatus", "SpecOrigin",
           "TerminalRunStatus", "WaitKind", "WaitState"]
