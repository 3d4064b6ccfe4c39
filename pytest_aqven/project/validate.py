"""Validate a YAML document into a spec model; pydantic errors become diagnostics at their position."""
from __future__ import annotations

import difflib
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from ..diagnostics import Diagnostic
from .yamlpos import YamlDoc

T = TypeVar("T")


def _fields_by_alias(model: type[BaseModel]) -> dict[str, Any]:
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items()}


def _model_for(annotation: Any, value: Any) -> type[BaseModel] | None:
    """The model class an annotation validates `value` with (through Optional, Annotated, unions)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_for(typing.get_args(annotation)[0], value)
    if origin in (typing.Union, types.UnionType):
        models = [m for a in typing.get_args(annotation) if (m := _model_for(a, value))]
        for m in models:
            disc = _discriminator(m)
            if disc and isinstance(value, dict) and value.get(disc[0]) in disc[1]:
                return m
        return models[0] if len(models) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _discriminator(model: type[BaseModel]) -> tuple[str, tuple] | None:
    for name in ("type", "node", "kind"):
        f = model.model_fields.get(name)
        if f is not None and typing.get_origin(f.annotation) is typing.Literal:
            return name, typing.get_args(f.annotation)
    return None


def _child(annotation: Any, seg: Any, value: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _child(typing.get_args(annotation)[0], seg, value)
    if origin in (list, dict):
        return typing.get_args(annotation)[-1]
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(annotation):
            if typing.get_origin(a) in (list, dict) or typing.get_origin(a) is typing.Annotated:
                c = _child(a, seg, value)
                if c is not None:
                    return c
    model = _model_for(annotation, value)
    if model is not None:
        return _fields_by_alias(model).get(seg)
    return None


def _allowed_keys(root: Any, data: Any, path: tuple) -> list[str]:
    annotation, value = root, data
    for seg in path:
        annotation = _child(annotation, seg, value)
        value = value[seg] if isinstance(value, (dict, list)) else None
        if annotation is None:
            return []
    model = _model_for(annotation, value)
    return list(_fields_by_alias(model)) if model else []


def _data_path(data: Any, loc: tuple) -> tuple:
    """Map a pydantic loc onto the document: drop union tags that are not keys of the data."""
    path: list = []
    node = data
    for i, seg in enumerate(loc):
        if isinstance(node, dict) and seg in node:
            path.append(seg)
            node = node[seg]
        elif isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            path.append(seg)
            node = node[seg]
        elif isinstance(seg, str) and (seg.startswith("function-") or i < len(loc) - 1):
            continue
        else:
            path.append(seg)
            node = None
    return tuple(path)


def _clean(msg: str) -> str:
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix):]
    return msg[0].lower() + msg[1:] if msg else msg


def spec_diagnostics(doc: YamlDoc, annotation: Any, exc: ValidationError, what: str) -> list[Diagnostic]:
    out = []
    for err in exc.errors():
        path = _data_path(doc.data, tuple(err["loc"]))
        kind = err["type"]
        if kind == "extra_forbidden":
            key = str(path[-1])
            allowed = _allowed_keys(annotation, doc.data, path[:-1])
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = (f"did you mean {close[0]}? " if close else "") + (
                f"allowed keys: {', '.join(allowed)}" if allowed else "remove the key")
            out.append(doc.diag("E_UNKNOWN_KEY", path, f"{what}: key {key} is not allowed here", hint))
        elif kind == "missing":
            out.append(doc.diag("E_SPEC_INVALID", path, f"{what}: key {path[-1]} is required",
                                f"add {path[-1]}"))
        else:
            out.append(doc.diag("E_SPEC_INVALID", path, f"{what}: {_clean(err['msg'])}",
                                None if not isinstance(err.get("input"), (str, int, float)) else
                                f"the value here is {err['input']!r}"))
    return out


_ADAPTERS: dict[int, tuple[Any, TypeAdapter]] = {}


def _adapter(annotation: Any) -> TypeAdapter:
    """Building a TypeAdapter costs more than validating a file with it: one per spec annotation."""
    cached = _ADAPTERS.get(id(annotation))
    if cached is None or cached[0] is not annotation:
        cached = _ADAPTERS[id(annotation)] = (annotation, TypeAdapter(annotation))
    return cached[1]


def validate(doc: YamlDoc, annotation: type[T] | Any, what: str) -> tuple[T | None, list[Diagnostic]]:
    if not isinstance(doc.data, dict):
        return None, [doc.diag("E_SPEC_INVALID", (), f"{what}: the file must hold a mapping of keys")]
    try:
        return _adapter(annotation).validate_python(doc.data), []
    except ValidationError as exc:
        return None, spec_diagnostics(doc, annotation, exc, what)
