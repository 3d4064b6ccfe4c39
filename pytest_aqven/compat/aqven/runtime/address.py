"""`aqven.runtime.address`: where in a run a node executed, and the base models of AQVEN's run API."""
from __future__ import annotations

from typing import Annotated, Any, NewType

from pydantic import BaseModel, ConfigDict, Field

RunId = NewType("RunId", str)
ClientOpId = NewType("ClientOpId", str)
JsonObject = dict[str, Any]


class RequestModel(BaseModel):
    """What a caller sends: closed."""
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ResourceModel(BaseModel):
    """What the engine answers: keys it does not know yet are ignored (newer engines add some)."""
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class ExecutionAddress(RequestModel):
    """One execution of a node: AQVEN's {node_id, branch_key, iteration, item_index} (engine/trace.py)."""
    node_id: str
    branch_key: str | None
    iteration: Annotated[int, Field(ge=0)] | None
    item_index: Annotated[int, Field(ge=0)] | None


def node_address(node_id: str, *, branch_key: str | None = None, iteration: int | None = None,
                 item_index: int | None = None) -> ExecutionAddress:
    return ExecutionAddress(node_id=node_id, branch_key=branch_key, iteration=iteration, item_index=item_index)


class Problem(ResourceModel):
    path: tuple[str | int, ...]
    code: str
    message: str


__all__ = ["ClientOpId", "ExecutionAddress", "JsonObject", "Problem", "RequestModel", "ResourceModel", "RunId",
           "node_address"]
