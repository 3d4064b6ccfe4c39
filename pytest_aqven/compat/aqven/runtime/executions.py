"""`aqven.runtime.executions`: the record of a node's execution: its attempts and their causes, its
prompt and response, its checks, and a run's error."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import Field

from ....project.builtin_types import MediaValue
from .address import ExecutionAddress, JsonObject, Problem, ResourceModel
from .human import HumanWaitDetail
from .values import ValueRef
from .vocabulary import (AttemptAction, AttemptCauseKind, CallOutcome, ExecutionStatus, ItemRecoveryDecision,
                         PromptPartKind, PromptRole, ResolvedOutputMode)

NonNegative = Annotated[int, Field(ge=0)]


class OutputShape(ResourceModel):
    depth: NonNegative = 0
    deepest_path: str | None = None
    max_items: NonNegative | None = None
    max_items_path: str | None = None
    enum_size: NonNegative | None = None
    enum_path: str | None = None


class ModelErrorDetails(ResourceModel):
    agent: str | None = None
    model: str | None = None
    output_mode: ResolvedOutputMode | None = None
    attempt: Annotated[int, Field(ge=1)] | None = None
    raw_excerpt: str | None = None
    violations: tuple[Problem, ...] = ()
    status_code: Annotated[int, Field(ge=100, le=599)] | None = None
    provider: str | None = None
    provider_code: str | None = None
    provider_response: str | None = None
    output_shape: OutputShape | None = None


class RunError(ResourceModel):
    """Why a run failed: its code (docs/engine.md lists them), message, and the node's address."""
    code: str
    message: str
    address: ExecutionAddress | None
    hint: str | None = None
    details: ModelErrorDetails | None = None


class AttemptCause(ResourceModel):
    kind: AttemptCauseKind
    message: str
    schema_errors: tuple[Problem, ...]
    code: str | None = None
    hint: str | None = None
    details: ModelErrorDetails | None = None


class Attempt(ResourceModel):
    attempt: Annotated[int, Field(ge=1)]
    cause: AttemptCause | None
    action: AttemptAction
    model: str | None
    latency_ms: NonNegative | None
    cost_usd: Decimal
    tokens_in: NonNegative
    tokens_out: NonNegative
    prompt_ref: ValueRef | None
    response_ref: ValueRef | None


class ItemError(ResourceModel):
    code: str
    message: str


class ItemRecovery(ResourceModel):
    item_index: NonNegative
    policy: str
    decision: ItemRecoveryDecision
    error: ItemError
    default_ref: ValueRef | None


class NodeExecution(ResourceModel):
    address: ExecutionAddress
    kind: str
    status: ExecutionStatus
    attempts_count: NonNegative
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    latency_ms: NonNegative | None
    agent: str | None
    inference: str | None
    model: str | None
    profile: str | None
    cost_usd: Decimal
    tokens_in: NonNegative
    tokens_out: NonNegative
    cache_hit: bool
    degraded: bool
    summary: str | None
    input_ref: ValueRef | None
    output_ref: ValueRef | None
    trace_id: str | None
    span_id: str | None
    recovered_items: tuple[ItemRecovery, ...] = ()


class SlotProvenance(ResourceModel):
    from_: str = Field(alias="from")
    need_id: str | None
    kind: str


class PromptPart(ResourceModel):
    kind: PromptPartKind
    text: str | None
    media: MediaValue | None


class PromptTraceMessage(ResourceModel):
    role: PromptRole
    parts: tuple[PromptPart, ...]


class SlotRange(ResourceModel):
    slot: str
    message_index: NonNegative
    part_index: NonNegative
    offset: NonNegative
    length: NonNegative


class PromptTrace(ResourceModel):
    level: int
    template_sha256: str | None
    rendered_sha256: str
    rendered_ref: ValueRef | None
    messages: tuple[PromptTraceMessage, ...]
    slot_ranges: tuple[SlotRange, ...]
    variants: dict[str, str]
    output_schema_sent: JsonObject | None


class ResponseTrace(ResourceModel):
    outcome: CallOutcome
    raw_ref: ValueRef | None
    parsed_ref: ValueRef | None


class CheckOutcome(ResourceModel):
    check: str
    on_fail: Literal["retry", "fail", "flag"]
    passed: bool
    feedback: str | None
    attempt: Annotated[int, Field(ge=1)]


class AllowedSetMember(ResourceModel):
    value: str
    label: str | None


class ResolvedAllowedSet(ResourceModel):
    type_id: str
    source: str
    labels_from: str | None
    members: tuple[AllowedSetMember, ...]


class ExecutionDetail(NodeExecution):
    provenance: dict[str, SlotProvenance]
    input_schema: Any = None
    output_schema: Any = None
    schema_source: Literal["run", "current", "unavailable"] = "unavailable"
    allowed_sets: tuple[ResolvedAllowedSet, ...] = ()
    prompt: PromptTrace | None
    response: ResponseTrace | None
    attempts: tuple[Attempt, ...]
    checks: tuple[CheckOutcome, ...]
    rule_firings: tuple[JsonObject, ...]
    error: RunError | None
    human: HumanWaitDetail | None


__all__ = ["AllowedSetMember", "Attempt", "AttemptCause", "CheckOutcome", "ExecutionDetail", "ItemError",
           "ItemRecovery", "ModelErrorDetails", "NodeExecution", "OutputShape", "PromptPart", "PromptTrace",
           "PromptTraceMessage", "ResolvedAllowedSet", "ResponseTrace", "RunError", "SlotProvenance", "SlotRange"]
