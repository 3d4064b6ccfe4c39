"""The types registry: pydantic models built once from types/ and from field lists, with the names
AQVEN's generator gives them (`<Type>`, `<Flow><Node>Out`, `<Inference>In`, ...)."""
from __future__ import annotations

import datetime as dt
import keyword
import re
from collections.abc import Sequence, Set
from typing import Annotated, Any, ClassVar, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from . import builtin_types as bt, specs

BUILTINS: dict[str, Any] = {
    "Text": str, "Int": int, "Float": float, "Bool": bool, "Date": dt.date, "DateTime": dt.datetime,
    "TimeZone": str, "Locale": str, "TenantId": str,
    "Score": Annotated[float, Field(ge=0, le=1)], "Json": Any,
    # values whose shape is only known at run time (the engine validates them against their FieldSpecs)
    "Dynamic": Any, "DynamicValue": Any,
    "FieldSpec": bt.FieldSpec, "MapItemError": bt.MapItemError, **bt.MEDIA_TYPES,
}
_REF = re.compile(r"^([A-Z][A-Za-z0-9]*)((?:\[\])*)(\?)?$")


def pascal(snake: str) -> str:
    return "".join(part.capitalize() for part in snake.split("_"))


class UnknownType(LookupError):
    pass


# the config of every generated model (AQVEN's aqven.spec.GENERATED_CONFIG): closed, immutable, and
# validated again when passed in; it dumps by alias (a field named `from` is the attribute `from_`)
GENERATED_CONFIG = ConfigDict(extra="forbid", frozen=True, revalidate_instances="always", serialize_by_alias=True)
# names a field cannot take as an attribute: it becomes `<name>_` with the name as its alias, as in AQVEN
RESERVED_NAMES = frozenset({*dir(BaseModel), *keyword.kwlist})


def attribute(name: str) -> str:
    """The attribute of a declared field on its generated model."""
    return f"{name}_" if name in RESERVED_NAMES else name


class Record(BaseModel):
    model_config = GENERATED_CONFIG
    __aqven_fields__: ClassVar[Sequence[specs.FieldDecl]]   # the declarations it was built from


class Registry:
    """Type id -> python type. Records and union variants become pydantic models, enums Literal types,
    ids and value types constrained scalars. Every model is built once and cached."""

    def __init__(self, type_specs: dict[str, Any], unreadable: Set[str] = frozenset()) -> None:
        self.specs = type_specs            # type id -> TypeSpec
        self.unreadable = unreadable       # types whose file did not load: Any, so nothing cascades from them
        self._built: dict[str, Any] = {}
        self._records: dict[tuple[str, int], tuple[Any, type[BaseModel]]] = {}

    def __contains__(self, type_id: str) -> bool:
        return type_id in BUILTINS or type_id in self.specs

    def parse_ref(self, ref: str) -> tuple[str, int, bool]:
        m = _REF.match(ref)
        if not m:
            raise UnknownType(f"{ref} is not a type reference (TypeName, TypeName[] or TypeName?)")
        return m.group(1), len(m.group(2)) // 2, bool(m.group(3))

    def resolve(self, ref: str) -> Any:
        base, lists, optional = self.parse_ref(ref)
        t: Any = self.named(base)
        for _ in range(lists):
            t = list[t]
        return Optional[t] if optional else t

    def named(self, type_id: str) -> Any:
        if type_id in BUILTINS:
            return BUILTINS[type_id]
        if type_id in self._built:
            return self._built[type_id]
        if type_id in self.unreadable:
            return Any
        spec = self.specs.get(type_id)
        if spec is None:
            raise UnknownType(f"type {type_id} is neither a built-in type nor a type of types/")
        t: Any
        if isinstance(spec, specs.EnumTypeSpec):
            t = Literal[tuple(v.value for v in spec.values)]
        elif isinstance(spec, specs.ValueTypeSpec):
            t = constrained(BUILTINS[spec.base], spec)
        elif isinstance(spec, specs.IdTypeSpec):
            t = Annotated[str, Field(pattern=spec.pattern, max_length=spec.max_length)]
        else:
            self._built[type_id] = None    # a recursive reference shows up as an error, not a loop
            try:
                t = self._union(type_id, spec) if isinstance(spec, specs.UnionTypeSpec) else \
                    self._model(type_id, spec.fields)
            except Exception:
                del self._built[type_id]   # not a half-built type: the next caller gets the error too
                raise
        self._built[type_id] = t
        return t

    def record(self, name: str, fields: Sequence[specs.FieldDecl]) -> type[BaseModel]:
        """The model of a field list (a node's out, an inference's in), built once per list."""
        key = (name, id(fields))
        cached = self._records.get(key)
        if cached is None or cached[0] is not fields:
            cached = self._records[key] = (fields, self._model(name, fields))
        return cached[1]

    def _model(self, name: str, fields: Sequence[specs.FieldDecl], base: type[Record] = Record,
               extra: dict[str, Any] | None = None) -> type[Record]:
        definitions: dict[str, Any] = dict(extra or {})
        for f in fields:
            t = self.resolve(f.type)
            if t is None:
                raise UnknownType(f"type {f.type} refers to itself")
            t = constrained(t, f)
            default = None if f.type.endswith("?") else ...
            alias = f.name if f.name in RESERVED_NAMES else None
            definitions[attribute(f.name)] = (t, Field(default, alias=alias, description=f.description))
        model = create_model(name, __base__=base, **definitions)
        model.__aqven_fields__ = fields     # the declarations: the checker's type pass and the runner's fit errors
        return model

    def _union(self, type_id: str, spec: specs.UnionTypeSpec) -> Any:
        """A tagged union: one model per variant (`<Type><Variant>`), the discriminator holding its name."""
        members = []
        for v in spec.variants:
            tag = {spec.discriminator: (Literal[v.name], ...)}
            members.append(self._model(f"{type_id}{pascal(v.name)}", v.fields, extra=tag))
        if len(members) == 1:
            return members[0]
        return Annotated[Union[tuple(members)], Field(discriminator=spec.discriminator)]

    def union_variants(self, type_id: str) -> dict[str, type[BaseModel]]:
        """Generated name -> model of every variant of a union type."""
        t = self.named(type_id)
        members = typing_args(t)
        return {m.__name__: m for m in members}

    def json_schema(self, model: type[BaseModel]) -> dict:
        return model.model_json_schema()


def typing_args(t: Any) -> list[Any]:
    import typing
    if typing.get_origin(t) is Annotated:
        t = typing.get_args(t)[0]
    if typing.get_origin(t) is Union:
        return list(typing.get_args(t))
    return [t] if isinstance(t, type) else []


def _scalar(t: Any) -> bool:
    """Text, numbers and dates take item constraints; records, unions and media do not."""
    import typing
    while typing.get_origin(t) is Annotated:
        t = typing.get_args(t)[0]
    return t in (str, int, float, dt.date, dt.datetime)


_SCALAR_KEYS = (("minimum", "ge"), ("maximum", "le"), ("exclusive_minimum", "gt"), ("exclusive_maximum", "lt"),
                ("multiple_of", "multiple_of"), ("pattern", "pattern"))


def constrained(t: Any, f: Any) -> Any:
    """The type `t` with the JSON-schema constraints of a declaration. On a list, the item constraints
    (pattern, bounds, length of text, enum) apply to each item and minItems/maxItems to the list."""
    import typing
    optional = False
    if typing.get_origin(t) is Union and type(None) in typing.get_args(t):
        optional, t = True, next(a for a in typing.get_args(t) if a is not type(None))
    is_list = typing.get_origin(t) is list
    item: Any = typing.get_args(t)[0] if is_list else t
    item_kw: dict[str, Any] = {k2: getattr(f, k1) for k1, k2 in _SCALAR_KEYS if getattr(f, k1, None) is not None}
    for k1, k2 in (("min_length", "min_length"), ("max_length", "max_length")):
        if getattr(f, k1, None) is not None:
            item_kw[k2] = getattr(f, k1)
    enum = getattr(f, "enum", None)
    if enum:
        item = Literal[tuple(enum)]
        item_kw = {}
    if item_kw and _scalar(item):
        item = Annotated[item, Field(**item_kw)]
    if is_list:
        list_kw = {k2: getattr(f, k1) for k1, k2 in (("min_items", "min_length"), ("max_items", "max_length"))
                   if getattr(f, k1, None) is not None}
        t = Annotated[list[item], Field(**list_kw)] if list_kw else list[item]
    else:
        t = item
    return Optional[t] if optional else t
