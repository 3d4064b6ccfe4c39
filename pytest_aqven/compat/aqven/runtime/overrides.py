"""`aqven.runtime.overrides`: a node's output (or failure) given instead of running it."""
from __future__ import annotations

from typing import Annotated, Any, Sequence

from pydantic import Field

from .address import ExecutionAddress, RequestModel

OVERRIDE_CODE = "NODE_OUTPUT_OVERRIDE"


class NodeOutputError(RequestModel):
    code: Annotated[str, Field(min_length=1)] = OVERRIDE_CODE
    message: Annotated[str, Field(min_length=1)]


class NodeOutputOverride(RequestModel):
    node_id: Annotated[str, Field(min_length=1)]
    branch_key: str | None = None
    iteration: Annotated[int, Field(ge=0)] | None = None
    item_index: Annotated[int, Field(ge=0)] | None = None
    output: Any = None
    error: NodeOutputError | None = None

    def matches(self, address: ExecutionAddress) -> bool:
        wanted = ((self.branch_key, address.branch_key), (self.iteration, address.iteration),
                  (self.item_index, address.item_index))
        return self.node_id == address.node_id and all(w is None or w == a for w, a in wanted)


def node_output(node_id: str, output: Any, *, branch_key: str | None = None, iteration: int | None = None,
                item_index: int | None = None) -> NodeOutputOverride:
    return NodeOutputOverride(node_id=node_id, branch_key=branch_key, iteration=iteration, item_index=item_index,
                              output=output)


def node_failure(node_id: str, message: str, *, code: str = OVERRIDE_CODE, branch_key: str | None = None,
                 iteration: int | None = None, item_index: int | None = None) -> NodeOutputOverride:
    return NodeOutputOverride(node_id=node_id, branch_key=branch_key, iteration=iteration, item_index=item_index,
                              error=NodeOutputError(code=code, message=message))


def override_for(overrides: Sequence[NodeOutputOverride], address: ExecutionAddress) -> NodeOutputOverride | None:
    return next((item for item in overrides if item.matches(address)), None)


__all__ = ["OVERRIDE_CODE", "NodeOutputError", "NodeOutputOverride", "node_failure", "node_output", "override_for"]
