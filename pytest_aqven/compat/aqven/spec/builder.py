"""`aqven.spec.builder`: flows written in Python (`flow.py` with `build() -> Flow`) and inferences declared
as models. Each builder returns the spec models a YAML file would give (LlmNodeSpec, CodeNodeSpec, ...);
a code node's inputs and outputs come from its function's annotations, each with a description
(`Annotated[str, Field(description=...)]` or `In(description=...)`), as AQVEN requires."""
from __future__ import annotations

import datetime as dt
import inspect
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Generic, Literal, Mapping, NewType, Sequence, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from .builtins import BOOL, DATE, DATE_TIME, FLOAT, INT, TEXT
from .models import CodeNodeSpec, FlowSpec, InferenceSpec, LlmNodeSpec, NodeBase, ToolNodeSpec
from .modelgen import BUILTIN_ANNOTATIONS
from .names import API_VERSION, NodeId, TypeId
from .typeref import TypeRef

try:                                  # `type X = ...` aliases name their type, as in AQVEN's generated module
    from typing import TypeAliasType  # type: ignore[attr-defined]
except ImportError:                   # Python 3.11
    from typing_extensions import TypeAliasType

PORT_MARKER = "aqven_port"
_CONSTRAINTS = ("maxLength", "maxItems", "minimum", "maximum", "pattern", "enum")
_SCALARS = {str: TEXT, int: INT, float: FLOAT, bool: BOOL, dt.date: DATE, dt.datetime: DATE_TIME}
_SCALAR_KEYS = {TEXT: ("maxLength", "pattern"), INT: ("minimum", "maximum"), FLOAT: ("minimum", "maximum")}
_MODEL_TYPES = {model: type_id for type_id, model in BUILTIN_ANNOTATIONS.items()
                if isinstance(model, type) and issubclass(model, BaseModel)}


class BuilderError(Exception):
    pass


class Inference(BaseModel):
    """The base of an inference declared in Python: each field marked In(...) or Out(...)."""
    model_config = ConfigDict(extra="forbid", frozen=True)


S = TypeVar("S", bound=NodeBase)


class BuiltNode(Generic[S]):
    __slots__ = ("_node_id", "_spec")

    def __init__(self, node_id: NodeId, spec: S) -> None:
        self._node_id = node_id
        self._spec = spec

    def __repr__(self) -> str:
        return f"BuiltNode(node_id={self._node_id!r}, spec={self._spec!r})"

    @property
    def node_id(self) -> NodeId:
        return self._node_id

    @property
    def spec(self) -> S:
        return self._spec


LlmNode = BuiltNode[LlmNodeSpec]
CodeNode = BuiltNode[CodeNodeSpec]
ToolNode = BuiltNode[ToolNodeSpec]


@dataclass(frozen=True, slots=True)
class Flow:
    """What `build()` returns: the flow file's spec and its nodes' specs by id."""
    spec: FlowSpec
    nodes: Mapping[NodeId, Any]


def _port(direction: str, description: str, values: dict[str, Any]) -> Any:
    marker = {PORT_MARKER: direction, **{k: v for k, v in values.items() if v is not None}}
    return Field(description=description, json_schema_extra=marker)


def In(*, description: str, max_length: int | None = None, max_items: int | None = None,
       minimum: float | None = None, maximum: float | None = None, pattern: str | None = None) -> Any:
    """An input field of an inference model (or a described parameter of a code node's function)."""
    return _port("in", description, {"maxLength": max_length, "maxItems": max_items, "minimum": minimum,
                                     "maximum": maximum, "pattern": pattern})


def Out(*, description: str, max_length: int | None = None, max_items: int | None = None,
        minimum: float | None = None, maximum: float | None = None, pattern: str | None = None) -> Any:
    """An output field of an inference model."""
    return _port("out", description, {"maxLength": max_length, "maxItems": max_items, "minimum": minimum,
                                      "maximum": maximum, "pattern": pattern})


def _validate(model: Any, owner: str, data: dict[str, Any]) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise BuilderError(f"{owner}: spec does not pass model {model.__name__}: {exc}") from None


def _header(kind: str, description: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "Node", "node": kind, "description": description}


def _bindings(bind: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"name": name, "from": source} for name, source in bind.items()]


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def llm(node_id: str, *, inference: str, agent: str, bind: Mapping[str, str], description: str) -> LlmNode:
    data = {**_header("llm", description), "inference": inference, "agent": agent, "in": _bindings(bind)}
    return BuiltNode(NodeId(node_id), _validate(LlmNodeSpec, node_id, data))


def tool(node_id: str, *, tool: str, bind: Mapping[str, str], description: str) -> ToolNode:
    data = {**_header("tool", description), "tool": tool, "in": _bindings(bind)}
    return BuiltNode(NodeId(node_id), _validate(ToolNodeSpec, node_id, data))


def code(node_id: str, fn: Callable[..., BaseModel], *, bind: Mapping[str, str], description: str) -> CodeNode:
    """A code node running `fn`: its inputs are fn's parameters (bound by `bind`), its outputs the fields of
    the model fn returns."""
    if not callable(fn):
        raise BuilderError(f"code node {node_id}: fn must be a function")
    ports = _parameter_ports(fn)
    names = [p.name for p in ports]
    missing, extra = [n for n in names if n not in bind], sorted(set(bind) - set(names))
    if missing or extra:
        raise BuilderError(f"node {node_id}: bind does not match the inputs: missing {', '.join(missing) or '-'}, "
                           f"extra {', '.join(extra) or '-'}")
    data = {**_header("code", description), "run": _code_ref(fn),
            "in": [{**_field_json(p), "from": bind[p.name]} for p in ports],
            "out": [_field_json(p) for p in _return_ports(fn)]}
    return BuiltNode(NodeId(node_id), _validate(CodeNodeSpec, node_id, data))


def flow(*, description: str, input: type[BaseModel], output: type[BaseModel], returns: Mapping[str, str],
         nodes: Sequence[BuiltNode[Any]], context: Sequence[Any] = (), limits: Any = None) -> Flow:
    for model, key in ((input, "input"), (output, "output")):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise BuilderError(f"flow {key} must be a model class of <package>.types, not {model!r}")
    order = [n.node_id for n in nodes]
    duplicates = sorted({n for n in order if order.count(n) > 1})
    if duplicates:
        raise BuilderError(f"duplicate node ids: {', '.join(duplicates)}")
    names = [f.alias or name for name, f in output.model_fields.items()]
    missing, extra = [n for n in names if n not in returns], sorted(set(returns) - set(names))
    if missing or extra:
        raise BuilderError(f"returns does not match the fields of {output.__name__}: missing "
                           f"{', '.join(missing) or '-'}, extra {', '.join(extra) or '-'}")
    data: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Flow", "description": description,
                            "input": input.__name__, "output": output.__name__,
                            "returns": [{"name": n, "from": returns[n]} for n in names], "order": list(order)}
    if context:
        data["context"] = [getattr(k, "value", k) for k in context]
    if limits is not None:
        data["limits"] = _dump(limits) if isinstance(limits, BaseModel) else dict(limits)
    spec = _validate(FlowSpec, "flow", data)
    return Flow(spec=spec, nodes={n.node_id: n.spec for n in nodes})


def inference_spec(model: type[Inference], *, description: str, prompt: str | None = None,
                   variants: Mapping[str, Any] | None = None, allowed_sets: Sequence[Any] = (),
                   examples: Sequence[Any] = (), checks: Sequence[Any] = ()) -> InferenceSpec:
    """The InferenceSpec of a model whose fields are marked In(...) or Out(...)."""
    ports = [_model_port(name, info) for name, info in model.model_fields.items()]
    unmarked = [p.name for p in ports if p.direction not in ("in", "out")]
    if unmarked:
        raise BuilderError(f"{model.__name__}: fields without In(...) or Out(...): {', '.join(unmarked)}")
    data: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Inference", "description": description,
                            "in": [_field_json(p) for p in ports if p.direction == "in"],
                            "out": [_field_json(p) for p in ports if p.direction == "out"]}
    if prompt is not None:
        data["prompt"] = prompt
    for key, values in (("allowed_sets", allowed_sets), ("examples", examples), ("checks", checks)):
        if values:
            data[key] = [_dump(v) for v in values]
    if variants:
        data["variants"] = {name: _dump(slot) for name, slot in variants.items()}
    return _validate(InferenceSpec, model.__name__, data)


# --- annotations -> field declarations ----------------------------------------------------------

@dataclass(frozen=True)
class _Port:
    name: str
    direction: Any
    description: str | None
    annotation: Any
    marker: Mapping[str, Any]


def _marker(info: FieldInfo) -> Mapping[str, Any]:
    extra = info.json_schema_extra
    return {} if extra is None or callable(extra) else extra


def _model_port(name: str, info: FieldInfo) -> _Port:
    marker = _marker(info)
    return _Port(info.alias or name, marker.get(PORT_MARKER), info.description, info.rebuild_annotation(), marker)


def _code_ref(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}:{fn.__qualname__}"


def _parameter_ports(fn: Callable[..., Any]) -> list[_Port]:
    hints = typing.get_type_hints(fn, include_extras=True)
    params = list(inspect.signature(fn).parameters.values())
    missing = [p.name for p in params if p.name not in hints]
    if missing:
        raise BuilderError(f"{_code_ref(fn)}: parameters without annotations: {', '.join(missing)}")
    ports = []
    for p in params:
        annotation = hints[p.name]
        infos = [m for m in _metadata(annotation) if isinstance(m, FieldInfo)]
        described = next((i for i in infos if i.description), None)
        ports.append(_Port(p.name, "in", described.description if described else None, annotation,
                           _marker(described) if described else {}))
    return ports


def _return_ports(fn: Callable[..., Any]) -> list[_Port]:
    model = _strip(typing.get_type_hints(fn, include_extras=True).get("return"))
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise BuilderError(f"{_code_ref(fn)}: the return type must be a Pydantic model with the out fields")
    return [_model_port(name, info) for name, info in model.model_fields.items()]


def _field_json(port: _Port) -> dict[str, Any]:
    if not port.description:
        raise BuilderError(f"field {port.name}: no description; set In(description=...), Out(description=...) "
                           "or Annotated[..., Field(description=...)]")
    type_ref, derived = describe_annotation(port.annotation)
    constraints = {**derived, **{k: port.marker[k] for k in _CONSTRAINTS if k in port.marker}}
    return {"name": port.name, "type": str(type_ref), "description": port.description,
            **{k: constraints[k] for k in _CONSTRAINTS if k in constraints}}


def _metadata(annotation: Any) -> tuple[Any, ...]:
    return tuple(typing.get_args(annotation)[1:]) if typing.get_origin(annotation) is Annotated else ()


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _schema(annotation: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    if not keys:
        return {}
    schema = TypeAdapter(annotation).json_schema()
    return {k: schema[k] for k in keys if k in schema}


def describe_annotation(annotation: Any) -> tuple[TypeRef, Mapping[str, Any]]:
    """The type notation of a Python annotation (`list[Part] | None` -> `Part[]?`) and its constraints."""
    inner, optional = annotation, False
    if isinstance(inner, types.UnionType) or typing.get_origin(inner) is typing.Union:
        members = [m for m in typing.get_args(inner) if m is not type(None)]
        if len(members) != 1:
            raise BuilderError(f"{annotation!r}: the only union that maps to the type notation is T | None")
        inner, optional = members[0], True
    if typing.get_origin(_strip(inner)) is list:
        item_type, item = typing.get_args(_strip(inner))[0], None
        item = _item(item_type)
        return TypeRef(item[0], True, optional), {**item[1], **_schema(inner, ("maxItems",))}
    type_id, constraints = _item(inner)
    return TypeRef(type_id, False, optional), constraints


def _item(annotation: Any) -> tuple[TypeId, dict[str, Any]]:
    stripped = _strip(annotation)
    if isinstance(stripped, types.UnionType) or typing.get_origin(stripped) in (list, typing.Union):
        raise BuilderError(f"{annotation!r}: lists of lists and lists of optional values are not allowed")
    if isinstance(stripped, TypeAliasType):
        target = _strip(stripped.__value__)
        return TypeId(target.__name__ if isinstance(target, NewType) else stripped.__name__), {}
    if isinstance(stripped, NewType):
        return TypeId(stripped.__name__), {}
    if typing.get_origin(stripped) is Literal:
        values = typing.get_args(stripped)
        if not all(isinstance(v, str) for v in values):
            raise BuilderError(f"{annotation!r}: Literal maps to enum only when every value is a string")
        return TEXT, {"enum": list(values)}
    if isinstance(stripped, type) and stripped in _SCALARS:
        type_id = _SCALARS[stripped]
        return type_id, _schema(annotation, _SCALAR_KEYS.get(type_id, ()))
    if isinstance(stripped, type) and issubclass(stripped, BaseModel):
        return TypeId(_MODEL_TYPES.get(stripped, stripped.__name__)), {}
    raise BuilderError(f"{annotation!r}: the type has no equivalent in the type notation")


__all__ = ["BuilderError", "BuiltNode", "CodeNode", "Flow", "In", "Inference", "LlmNode", "Out", "ToolNode", "code",
           "describe_annotation", "flow", "inference_spec", "llm", "tool"]
