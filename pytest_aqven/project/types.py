"""The types registry: pydantic models built at load time from types/ and from field lists."""
from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from . import specs

BUILTINS: dict[str, Any] = {
    "Text": str, "Int": int, "Float": float, "Bool": bool, "Date": dt.date, "DateTime": dt.datetime,
    "TimeZone": str, "Locale": str, "TenantId": str,
    "Score": Annotated[float, Field(ge=0, le=1)], "Json": Any,
}
_REF = re.compile(r"^([A-Z][A-Za-z0-9]*)((?:\[\])*)(\?)?$")


def pascal(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


class UnknownType(LookupError):
    pass


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Registry:
    """Type id -> python type. Record types become pydantic models, enums Literal types."""

    def __init__(self, type_specs: dict[str, Any]):
        self.specs = type_specs            # type id -> TypeSpec
        self._built: dict[str, Any] = {}

    def __contains__(self, type_id: str) -> bool:
        return type_id in BUILTINS or type_id in self.specs

    def parse_ref(self, ref: str) -> tuple[str, int, bool]:
        m = _REF.match(ref)
        if not m:
            raise UnknownType(f"{ref} is not a type reference (TypeName, TypeName[] or TypeName?)")
        return m.group(1), len(m.group(2)) // 2, bool(m.group(3))

    def resolve(self, ref: str) -> Any:
        base, lists, optional = self.parse_ref(ref)
        t = self.named(base)
        for _ in range(lists):
            t = list[t]
        return Optional[t] if optional else t

    def named(self, type_id: str) -> Any:
        if type_id in BUILTINS:
            return BUILTINS[type_id]
        if type_id in self._built:
            return self._built[type_id]
        spec = self.specs.get(type_id)
        if spec is None:
            raise UnknownType(f"type {type_id} is neither a built-in type nor a type of types/")
        if isinstance(spec, specs.EnumTypeSpec):
            t = Literal[tuple(v.value for v in spec.values)]  # type: ignore[misc]
        elif isinstance(spec, specs.ValueTypeSpec):
            t = Annotated[BUILTINS[spec.base], Field(**_constraints(spec))]
        else:
            self._built[type_id] = None    # a recursive reference shows up as an error, not a loop
            try:
                t = self.record(type_id, spec.fields)
            except Exception:
                del self._built[type_id]   # not a half-built type: the next caller gets the error too
                raise
        self._built[type_id] = t
        return t

    def record(self, name: str, fields: list[specs.FieldDecl]) -> type[BaseModel]:
        definitions: dict[str, Any] = {}
        for f in fields:
            t = self.resolve(f.type)
            if t is None:
                raise UnknownType(f"type {f.type} refers to itself")
            constraints = _constraints(f)
            if constraints:
                t = Annotated[t, Field(**constraints)]
            optional = f.type.endswith("?")
            definitions[f.name] = (t, None) if optional else (t, ...)
        return create_model(name, __base__=Record, **definitions)

    def json_schema(self, model: type[BaseModel]) -> dict:
        return model.model_json_schema()


def _constraints(f) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if getattr(f, "max_length", None) is not None:
        out["max_length"] = f.max_length
    if getattr(f, "max_items", None) is not None:
        out["max_length"] = f.max_items
    if getattr(f, "minimum", None) is not None:
        out["ge"] = f.minimum
    if getattr(f, "maximum", None) is not None:
        out["le"] = f.maximum
    if getattr(f, "pattern", None):
        out["pattern"] = f.pattern
    return out
