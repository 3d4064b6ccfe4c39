"""`aqven.runtime.human`: waits of human nodes and tool approvals, and the answers that resolve them."""
from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import Field

from .address import ClientOpId, ExecutionAddress, JsonObject, Problem, RequestModel, ResourceModel
from .values import ValueRef
from .vocabulary import OnTimeoutAction, ResumeOutcome, RunStatus, WaitKind, WaitState


class HumanWait(ResourceModel):
    address: ExecutionAddress
    wait_kind: WaitKind
    attempt: Annotated[int, Field(ge=1)]
    state: WaitState
    assignee: str
    waiting_since: dt.datetime
    deadline_at: dt.datetime
    on_timeout: OnTimeoutAction
    form_type_id: str


class HumanWaitAttempt(ResourceModel):
    attempt: Annotated[int, Field(ge=1)]
    assignee: str
    waiting_since: dt.datetime
    deadline_at: dt.datetime
    state: WaitState
    resolved_at: dt.datetime | None


class IgnoredAnswer(ResourceModel):
    client_op_id: ClientOpId
    sent_at: dt.datetime
    problems: tuple[Problem, ...]


class HumanWaitDetail(HumanWait):
    form_schema: JsonObject
    suspend_data: ValueRef | None
    attempts: tuple[HumanWaitAttempt, ...]
    resolved_by: ClientOpId | None
    answer_ref: ValueRef | None
    ignored_answers: tuple[IgnoredAnswer, ...]


class ScriptedAnswer(RequestModel):
    """The answer a human node (or a tool approval) gets in a run without a person: a case's answer."""
    address: ExecutionAddress
    attempt: Annotated[int, Field(ge=1)] = 1
    payload: Any


class ToolApprovalDecision(RequestModel):
    approve: bool
    message: str | None = None


class ResumeRequest(RequestModel):
    address: ExecutionAddress
    attempt: Annotated[int, Field(ge=1)]
    payload: Any
    client_op_id: ClientOpId


class ResumeResult(ResourceModel):
    outcome: ResumeOutcome
    status: RunStatus
    address: ExecutionAddress
    attempt: Annotated[int, Field(ge=1)]


__all__ = ["HumanWait", "HumanWaitAttempt", "HumanWaitDetail", "IgnoredAnswer", "ResumeRequest", "ResumeResult",
           "ScriptedAnswer", "ToolApprovalDecision"]
