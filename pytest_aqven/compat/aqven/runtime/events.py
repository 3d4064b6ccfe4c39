"""`aqven.runtime.events`: the events of a run, in order (`seq`), one model per kind."""
from __future__ import annotations

import datetime as dt
import typing
from decimal import Decimal
from typing import Annotated, Literal, Union

from pydantic import Field, TypeAdapter

from .address import ClientOpId, ExecutionAddress, Problem, ResourceModel, RunId
from .executions import AttemptCause, CheckOutcome, ItemRecovery, PromptTrace, RunError
from .values import InlineValue, ValueRef
from .vocabulary import (AttemptAction, AttemptCauseKind, CostSource, FinishedExecutionStatus, OnTimeoutAction,
                         RunMode, TerminalRunStatus, WaitKind)

OUTPUT_DELTA_BATCH_MS = 80
OutputPartKind = Literal["text", "reasoning", "tool_call_args", "output_json"]
Attempt = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
LoopStop = Literal["policy", "max_iter", "budget"]


class RunEventBase(ResourceModel):
    seq: Annotated[int, Field(ge=1)]
    at: dt.datetime
    run_id: RunId


class RunStartedEvent(RunEventBase):
    type: Literal["run_started"] = "run_started"
    flow_id: str
    content_hash: str
    mode: RunMode
    order: tuple[str, ...]
    input_ref: ValueRef | None


class NodeStarted(RunEventBase):
    type: Literal["node_started"] = "node_started"
    address: ExecutionAddress
    kind: str
    attempt: Attempt
    queued_ms: Count


class InferenceInputCaptured(RunEventBase):
    type: Literal["inference_input_captured"] = "inference_input_captured"
    address: ExecutionAddress
    stage: Literal["bound", "normalized"]
    agent: str
    inference: str
    input_ref: InlineValue
    variants: dict[str, str]


class InferencePromptCaptured(RunEventBase):
    type: Literal["inference_prompt_captured"] = "inference_prompt_captured"
    address: ExecutionAddress
    prompt: PromptTrace


class InferenceChecksCaptured(RunEventBase):
    type: Literal["inference_checks_captured"] = "inference_checks_captured"
    address: ExecutionAddress
    checks: tuple[CheckOutcome, ...]


class NodeAttemptFailed(RunEventBase):
    type: Literal["node_attempt_failed"] = "node_attempt_failed"
    address: ExecutionAddress
    attempt: Attempt
    cause: AttemptCause
    action: AttemptAction


class NodeProgress(RunEventBase):
    type: Literal["node_progress"] = "node_progress"
    address: ExecutionAddress
    done: Count
    total: Count


class MapItemRecovered(RunEventBase):
    type: Literal["map_item_recovered"] = "map_item_recovered"
    address: ExecutionAddress
    recovery: ItemRecovery


class NodeOutputDelta(RunEventBase):
    type: Literal["node_output_delta"] = "node_output_delta"
    address: ExecutionAddress
    attempt: Attempt
    part_kind: OutputPartKind
    part_index: Count
    tool_call_id: str | None = None
    tool_name: str | None = None
    delta: Annotated[str, Field(min_length=1)]
    cumulative_length: Annotated[int, Field(ge=1)]


class NodeAttemptDiscarded(RunEventBase):
    type: Literal["node_attempt_discarded"] = "node_attempt_discarded"
    address: ExecutionAddress
    attempt: Attempt
    cause: AttemptCauseKind
    discarded_parts: Count


class NodeSuspended(RunEventBase):
    type: Literal["node_suspended"] = "node_suspended"
    address: ExecutionAddress
    wait_kind: WaitKind
    attempt: Attempt
    form_type_id: str
    assignee: str
    waiting_since: dt.datetime
    deadline_at: dt.datetime
    on_timeout: OnTimeoutAction


class NodeResumed(RunEventBase):
    type: Literal["node_resumed"] = "node_resumed"
    address: ExecutionAddress
    attempt: Attempt
    resolved_by: ClientOpId
    answer_ref: ValueRef | None


class NodeAnswerIgnored(RunEventBase):
    type: Literal["node_answer_ignored"] = "node_answer_ignored"
    address: ExecutionAddress
    attempt: Attempt
    client_op_id: ClientOpId
    sent_at: dt.datetime
    problems: tuple[Problem, ...]


class NodeWaitTimedOut(RunEventBase):
    type: Literal["node_wait_timed_out"] = "node_wait_timed_out"
    address: ExecutionAddress
    attempt: Attempt
    on_timeout: OnTimeoutAction
    default_ref: ValueRef | None


class NodeWaitEscalated(RunEventBase):
    type: Literal["node_wait_escalated"] = "node_wait_escalated"
    address: ExecutionAddress
    from_attempt: Attempt
    attempt: Attempt
    assignee: str
    deadline_at: dt.datetime


class NodeFinished(RunEventBase):
    type: Literal["node_finished"] = "node_finished"
    address: ExecutionAddress
    status: FinishedExecutionStatus
    attempt: Attempt
    output_ref: ValueRef | None
    cost_usd: Decimal
    tokens_in: Count
    tokens_out: Count
    latency_ms: Count
    wait_ms: Count = 0
    model: str | None
    cache_hit: bool
    degraded: bool
    checks_failed: Count
    error: RunError | None = None
    cost_source: CostSource = "provider"
    unpriced_calls: Count = 0


class LoopIterationFinished(RunEventBase):
    type: Literal["loop_iteration_finished"] = "loop_iteration_finished"
    address: ExecutionAddress
    score: float | None
    stop_reason: LoopStop | None


class LoopExited(RunEventBase):
    type: Literal["loop_exited"] = "loop_exited"
    address: ExecutionAddress
    reason: LoopStop
    selected_iteration: Count | None


class RunSuspended(RunEventBase):
    type: Literal["run_suspended"] = "run_suspended"
    address: ExecutionAddress


class RunResumed(RunEventBase):
    type: Literal["run_resumed"] = "run_resumed"
    address: ExecutionAddress


class RunFinished(RunEventBase):
    type: Literal["run_finished"] = "run_finished"
    status: TerminalRunStatus
    output_ref: ValueRef | None
    error: RunError | None
    cost_usd: Decimal
    tokens_in: Count
    tokens_out: Count


RunEvent = Annotated[Union[RunStartedEvent, NodeStarted, InferenceInputCaptured, InferencePromptCaptured,
                           InferenceChecksCaptured, NodeAttemptFailed, NodeProgress, MapItemRecovered, NodeOutputDelta,
                           NodeAttemptDiscarded, NodeSuspended, NodeResumed, NodeAnswerIgnored, NodeWaitTimedOut,
                           NodeWaitEscalated, NodeFinished, LoopIterationFinished, LoopExited, RunSuspended,
                           RunResumed, RunFinished], Field(discriminator="type")]
RunEventType = Literal["run_started", "node_started", "inference_input_captured", "inference_prompt_captured",
                       "inference_checks_captured", "node_attempt_failed", "node_progress", "map_item_recovered",
                       "node_output_delta", "node_attempt_discarded", "node_suspended", "node_resumed",
                       "node_answer_ignored", "node_wait_timed_out", "node_wait_escalated", "node_finished",
                       "loop_iteration_finished", "loop_exited", "run_suspended", "run_resumed", "run_finished"]
RUN_EVENT_TYPES = frozenset(typing.get_args(RunEventType))
RUN_EVENT_ADAPTER: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)

__all__ = ["OUTPUT_DELTA_BATCH_MS", "RUN_EVENT_ADAPTER", "RUN_EVENT_TYPES", "InferenceChecksCaptured",
           "InferenceInputCaptured", "InferencePromptCaptured", "LoopExited", "LoopIterationFinished",
           "MapItemRecovered", "NodeAnswerIgnored", "NodeAttemptDiscarded", "NodeAttemptFailed", "NodeFinished",
           "NodeOutputDelta", "NodeProgress", "NodeResumed", "NodeStarted", "NodeSuspended", "NodeWaitEscalated",
           "NodeWaitTimedOut", "OutputPartKind", "RunEvent", "RunEventBase", "RunEventType", "RunFinished",
           "RunResumed", "RunStartedEvent", "RunSuspended"]
