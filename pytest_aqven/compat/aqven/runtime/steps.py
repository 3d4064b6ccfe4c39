"""`aqven.runtime.steps`: what a tool function receives (ToolContext, the engine's: engine/tools.py) and the
handles of long-running jobs (a tool with `wait:` starts a job and returns a JobHandle; its poll function
returns a JobPoll)."""
from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, Protocol, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field

from ....engine.tools import ToolContext

T = TypeVar("T")
JOB_CONFIG = ConfigDict(extra="forbid", frozen=True)


class BlobStore(Protocol):
    async def put(self, data: bytes, media_type: str, name: str | None) -> Any: ...

    async def get(self, media: Any) -> bytes: ...


class JobHandle(BaseModel):
    model_config = JOB_CONFIG
    job_id: str
    provider: str


class JobPending(BaseModel):
    model_config = JOB_CONFIG
    state: Literal["pending"] = "pending"
    progress: Annotated[float, Field(ge=0, le=1)] | None = None


class JobDone(BaseModel, Generic[T]):
    model_config = JOB_CONFIG
    state: Literal["done"] = "done"
    value: T


class JobFailed(BaseModel):
    model_config = JOB_CONFIG
    state: Literal["failed"] = "failed"
    message: str


class JobPoll:
    """What a poll function returns: `JobPoll[T]` is `JobPending | JobDone[T] | JobFailed`."""

    def __class_getitem__(cls, item: Any) -> Any:
        return Union[JobPending, JobDone[item], JobFailed]


__all__ = ["BlobStore", "JobDone", "JobFailed", "JobHandle", "JobPending", "JobPoll", "ToolContext"]
