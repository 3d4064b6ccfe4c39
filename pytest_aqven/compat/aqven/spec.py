"""`aqven.spec`: the value types user code meets (FieldSpec, DynamicValue, media, ids of the run
context), prompt messages for Python prompts, and the builders of a `flow.py` (`flow`, `llm`, `code`,
`tool`, returning a `Flow`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, NewType

from pydantic import BaseModel, ConfigDict

from ...project.builtin_types import (Audio, Document, DynamicValue, FieldSpec, Image, MapItemError, MediaValue,
                                      Video)
from ...project.specs import DynamicLimits
from ...project.types import GENERATED_CONFIG

__all__ = ["Audio", "BuiltNode", "BuilderError", "Document", "DynamicLimits", "DynamicValue", "FieldSpec", "Flow", "GENERATED_CONFIG",
           "Image", "Locale", "MapItemError", "MediaValue", "PromptMessage", "RenderedPrompt", "TenantId", "TimeZone",
           "Video", "assistant", "code", "flow", "llm", "system", "tool", "user"]

Locale = NewType("Locale", str)
TimeZone = NewType("TimeZone", str)
TenantId = NewType("TenantId", str)


# --- Python prompts ----------------------------------------------------------------------------

class PromptMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str
    cache: bool = False


class RenderedPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    messages: tuple[PromptMessage, ...]


def system(text: str, *, cache: bool = False) -> PromptMessage:
    return PromptMessage(role="system", content=text, cache=cache)


def user(text: str, *, cache: bool = False) -> PromptMessage:
    return PromptMessage(role="user", content=text, cache=cache)


def assistant(text: str, *, cache: bool = False) -> PromptMessage:
    return PromptMessage(role="assistant", content=text, cache=cache)


# --- flow.py builders --------------------------------------------------------------------------

class BuilderError(ValueError):
    pass


@dataclass(frozen=True)
class BuiltNode:
    """One node of a flow.py: its id, kind and the YAML keys it stands for."""
    id: str
    kind: Literal["llm", "code", "tool"]
    data: dict[str, Any]
    description: str
    fn: Callable[..., Any] | None = None        # the function of a code node


@dataclass(frozen=True)
class Flow:
    """What `build()` returns: the flow's keys, with input and output named by their model classes."""
    description: str
    input: type[BaseModel]
    output: type[BaseModel]
    returns: dict[str, str]
    nodes: tuple[BuiltNode, ...]
    context: tuple[str, ...] = ()
    limits: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _bindings(bind: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for name, value in (bind or {}).items():
        out.append({"name": name, "from": value} if isinstance(value, str) and value.startswith("$")
                   else {"name": name, "value": value})
    return out


def llm(node_id: str, *, inference: str | None = None, agent: str, bind: dict[str, Any] | None = None,
        description: str = "") -> BuiltNode:
    data: dict[str, Any] = {"agent": agent, "in": _bindings(bind)}
    if inference is not None:
        data["inference"] = inference
    return BuiltNode(node_id, "llm", data, description)


def tool(node_id: str, *, tool: str, bind: dict[str, Any] | None = None, description: str = "") -> BuiltNode:
    return BuiltNode(node_id, "tool", {"tool": tool, "in": _bindings(bind)}, description)


def code(node_id: str, *, fn: Callable[..., Any], bind: dict[str, Any] | None = None,
         description: str = "") -> BuiltNode:
    if not callable(fn):
        raise BuilderError(f"code node {node_id}: fn must be a function")
    return BuiltNode(node_id, "code", {"in": _bindings(bind)}, description, fn)


def flow(*, description: str, input: type[BaseModel], output: type[BaseModel], returns: dict[str, str],
         nodes: list[BuiltNode], context: tuple[str, ...] | list[str] = (), limits: dict[str, Any] | None = None
         ) -> Flow:
    for model, key in ((input, "input"), (output, "output")):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise BuilderError(f"flow {key} must be a model class of <package>.types, not {model!r}")
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        raise BuilderError(f"node ids repeat in the flow: {', '.join(ids)}")
    return Flow(description, input, output, dict(returns), tuple(nodes), tuple(context), limits)
