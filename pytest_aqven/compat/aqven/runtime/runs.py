"""`aqven.runtime.runs`: AQVEN's run API models (start, summary, snapshot, fork, cancel, pages)."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Annotated, Any, Generic, TypeVar

from pydantic import Field, model_validator

from ....project.specs import Limits
from .address import ExecutionAddress, JsonObject, Problem, RequestModel, ResourceModel, RunId
from .executions import NodeExecution, RunError
from .human import HumanWait, ScriptedAnswer
from .options import RunContext
from .values import ValueRef
from .vocabulary import ForkBase, LineageRelation, PromptSource, RunMode, RunStatus, SpecOrigin
from typing import Self

Count = Annotated[int, Field(ge=0)]
T = TypeVar("T")


class RunInputConflict(ValueError):
    def __init__(self) -> None:
        super().__init__("exactly one of input and dataset_item_id is required")


class RunStartRequest(RequestModel):
    flow_id: str
    at: str = "working"
    mode: RunMode
    context: RunContext | None = None
    input: Any = None
    dataset_item_id: str | None = None
    selected_nodes: tuple[str, ...] | None = None
    start_node: str | None = None
    end_node: str | None = None
    node_outputs: dict[str, Any] = {}
    cassette_id: str | None = None
    human_answers: tuple[ScriptedAnswer, ...] | None = None

    @model_validator(mode="after")
    def _one_input(self) -> Self:
        if (self.input is None) == (self.dataset_item_id is None):
            raise RunInputConflict()
        if (self.start_node is None) != (self.end_node is None):
            raise ValueError("start_node and end_node must be provided together")
        if self.start_node is not None and self.selected_nodes is not None:
            raise ValueError("selected_nodes and a node range cannot be combined")
        if self.start_node is None and self.node_outputs:
            raise ValueError("node_outputs can only be used with a node range")
        return self


class RunStarted(ResourceModel):
    run_id: RunId
    status: RunStatus
    content_hash: str
    spec_version_id: str
    last_seq: Count
    ui_url: str
    warnings: tuple[Problem, ...] = ()


class NodeCounts(ResourceModel):
    pending: Count
    running: Count
    ok: Count
    failed: Count
    skipped: Count
    suspended: Count
    cancelled: Count
    items_replaced: Count = 0
    items_skipped: Count = 0


class Lineage(ResourceModel):
    relation: LineageRelation
    parent_run_id: RunId


class RunSummary(ResourceModel):
    run_id: RunId
    flow_id: str
    status: RunStatus
    mode: RunMode
    started_at: dt.datetime
    finished_at: dt.datetime | None
    cost_usd: Decimal
    tokens_in: Count
    tokens_out: Count
    node_counts: NodeCounts
    content_hash: str
    definition_changed: bool
    waits: tuple[HumanWait, ...]
    lineage: Lineage | None
    dataset_item_id: str | None = None
    selected_nodes: tuple[str, ...] | None = None
    start_node: str | None = None
    end_node: str | None = None
    series_id: str | None = None
    experiment_id: str | None = None
    flow_experiment_id: str | None = None


class SpecVersionInfo(ResourceModel):
    id: str
    content_hash: str
    release_hash: str | None
    git_commit: str | None
    origin: SpecOrigin
    sources: dict[str, str]


class HumanAnswerStatus(ResourceModel):
    address: ExecutionAddress
    attempt: Annotated[int, Field(ge=1)]
    consumed: bool


class RunSnapshot(RunSummary):
    execution_id: str
    context: RunContext | None
    node_outputs: dict[str, Any] = {}
    spec_version: SpecVersionInfo
    input_ref: ValueRef | None
    output_ref: ValueRef | None
    error: RunError | None
    seed: int | None
    cassette_id: str | None
    catalog_snapshot_at: dt.datetime | None
    effective_config: JsonObject
    config_hash: str
    limits: Limits | None
    trace_id: str | None
    order: tuple[str, ...]
    executions: tuple[NodeExecution, ...]
    human_answers: tuple[HumanAnswerStatus, ...]
    last_seq: Count


class ForkOverrides(RequestModel):
    input: Any = None
    agent: str | None = None
    prompt_source: PromptSource | None = None


class ForkRequest(RequestModel):
    from_: ExecutionAddress = Field(alias="from")
    overrides: ForkOverrides | None = None
    at: ForkBase = "original"


class RunForked(ResourceModel):
    run_id: RunId
    lineage_parent: RunId


class CancelRequest(RequestModel):
    reason: str


class CancelResult(ResourceModel):
    status: RunStatus


class Page(ResourceModel, Generic[T]):
    items: tuple[T, ...]
    next_cursor: str | None
    total_estimate: Count | None


__all__ = ["CancelRequest", "CancelResult", "ForkOverrides", "ForkRequest", "HumanAnswerStatus", "Lineage",
           "NodeCounts", "Page", "RunForked", "RunInputConflict", "RunSnapshot", "RunStartRequest", "RunStarted",
           "RunSummary", "SpecVersionInfo"]
