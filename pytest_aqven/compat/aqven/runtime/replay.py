"""`aqven.runtime.replay`: what an offline run is told instead of calling out: an MCP tool's result, a
provider's scripted failure."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from .address import ExecutionAddress, JsonObject, RequestModel

ProviderFaultKind = Literal["provider_error"]


class McpToolStub(RequestModel):
    server: str
    tool: Annotated[str, Field(min_length=1)]
    arguments: JsonObject | None = None
    result: Any


class ProviderFault(RequestModel):
    address: ExecutionAddress
    model: str
    kind: ProviderFaultKind = "provider_error"
    attempt: Annotated[int, Field(ge=1)] = 1


class ToolReplayMiss(Exception):
    def __init__(self, address: ExecutionAddress, reason: str) -> None:
        super().__init__(f"offline replay: tool at {address.model_dump_json()} cannot run live: {reason}")
        self.address = address
        self.reason = reason


__all__ = ["McpToolStub", "ProviderFault", "ProviderFaultKind", "ToolReplayMiss"]
