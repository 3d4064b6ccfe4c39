"""`aqven.runtime.options`: how a flow is run from Python (`Project.flow(...).run(input, options)`) and
what the run gives back."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ....project.specs import Limits
from .address import RunId
from .executions import RunError
from .human import ScriptedAnswer
from .overrides import NodeOutputOverride
from .replay import McpToolStub, ProviderFault
from .steps import BlobStore
from .vocabulary import RunMode, RunStatus

MODEL_PATTERN = r"^[a-z][a-z0-9_-]{0,62}:[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$"
O = TypeVar("O")
_CONFIG = ConfigDict(extra="forbid", frozen=True)


class CassetteMode(StrEnum):
    REPLAY_STRICT = "replay_strict"
    RECORD = "record"
    RECORD_NEW = "record_new"


class CassetteConfig(BaseModel):
    model_config = _CONFIG
    directory: Path
    mode: CassetteMode


class ModelRoute(BaseModel):
    model_config = _CONFIG
    model: Annotated[str, Field(pattern=MODEL_PATTERN)]
    zdr: bool | None = None


@dataclass(frozen=True, slots=True)
class CallMedia:
    input: frozenset[str] = frozenset()
    output: frozenset[str] = frozenset({"text"})


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One model call as a route sees it: the agent's model, whether it uses tools, its media."""
    model: Any
    uses_tools: bool
    media: CallMedia


class CapabilityRoute(BaseModel):
    model_config = _CONFIG
    models: frozenset[str] = frozenset()
    media: frozenset[str] = frozenset()
    output: frozenset[str] = frozenset()
    tools: bool | None = None
    route: ModelRoute

    def matches(self, call: ModelCall) -> bool:
        model = getattr(call.model, "model", call.model)
        return ((not self.models or model in self.models) and (self.tools is None or self.tools == call.uses_tools)
                and self.media <= call.media.input and self.output <= call.media.output)


class ModelProfile(BaseModel):
    """Named routes from what a call needs to the model that serves it."""
    model_config = _CONFIG
    name: Annotated[str, Field(min_length=1)]
    routes: tuple[CapabilityRoute, ...]

    def route(self, call: ModelCall) -> ModelRoute | None:
        return next((item.route for item in self.routes if item.matches(call)), None)


class RunContext(BaseModel):
    """`$run.context`: the run's date, time zone, locale and tenant."""
    model_config = _CONFIG
    date: dt.date | None = None
    time_zone: str | None = None
    locale: str | None = None
    tenant_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunOptions:
    mode: RunMode = "live"
    context: RunContext | None = None
    cassettes: CassetteConfig | None = None
    human_answers: tuple[ScriptedAnswer, ...] = ()
    limits: Limits | None = None
    tool_http: Any = None
    mcp_stubs: tuple[McpToolStub, ...] = ()
    blobs: BlobStore | None = None
    faults: tuple[ProviderFault, ...] = ()
    models: ModelProfile | None = None
    outputs: tuple[NodeOutputOverride, ...] = ()


class RunResult(BaseModel, Generic[O]):
    model_config = _CONFIG
    run_id: RunId
    status: RunStatus
    output: O | None
    error: RunError | None
    cost_usd: Decimal
    tokens_in: Annotated[int, Field(ge=0)]
    tokens_out: Annotated[int, Field(ge=0)]


__all__ = ["CapabilityRoute", "CassetteConfig", "CassetteMode", "ModelCall", "ModelProfile", "ModelRoute",
           "RunContext", "RunOptions", "RunResult"]
