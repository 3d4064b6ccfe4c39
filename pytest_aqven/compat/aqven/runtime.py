"""`aqven.runtime`: what a tool function receives (ToolContext) and the handles of long-running jobs
(a tool with `wait:` starts a job and returns a JobHandle; its poll function returns a JobPoll)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Mapping, Protocol, TypeVar, Union

from pydantic import BaseModel, ConfigDict

__all__ = ["BlobStore", "JobDone", "JobFailed", "JobHandle", "JobPending", "JobPoll", "ToolContext"]

T = TypeVar("T")


class BlobStore(Protocol):
    async def put(self, data: bytes, media_type: str, name: str | None = None) -> Any: ...

    async def get(self, media: Any) -> bytes: ...


@dataclass
class ToolContext:
    """The first parameter of a tool function: an HTTP client, the tool's secrets by name, the blob
    store for media, and the idempotency key of this call (tools with `idempotency_key`)."""
    http: Any = None
    secrets: Mapping[str, str] = field(default_factory=dict)
    blobs: BlobStore | None = None
    idempotency_key: str | None = None

    def secret(self, name: str) -> str:
        try:
            return self.secrets[name]
        except KeyError:
            raise LookupError(f"the tool declares no secret {name} (secrets: of its tools/<id>.yaml)") from None


class JobHandle(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    job_id: str
    provider: str | None = None


class JobPending(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class JobDone(BaseModel, Generic[T]):
    model_config = ConfigDict(extra="forbid", frozen=True)
    value: T


class JobFailed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    message: str


class JobPoll:
    """What a poll function returns: `JobPoll[T]` is `JobPending | JobDone[T] | JobFailed`."""

    def __class_getitem__(cls, item: Any) -> Any:
        return Union[JobPending, JobDone[item], JobFailed]
