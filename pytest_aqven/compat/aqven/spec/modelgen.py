"""`aqven.spec.modelgen`: pydantic models from type declarations, as `<package>.types` and the runner
build them (project/types.py): records are models with GENERATED_CONFIG, enums Literals, id and value
types constrained scalars, unions tagged unions of `<Type><Variant>` models."""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Callable, Mapping, Optional, Protocol, Sequence

from pydantic import BaseModel, Field, TypeAdapter, create_model
from typing_extensions import TypeForm

from ....project import specs
from ....project.types import GENERATED_CONFIG, RESERVED_NAMES, Registry, UnknownType, constrained, attribute, pascal
from .builtins import (AUDIO, BOOL, DATE, DATE_TIME, DOCUMENT, DYNAMIC, DYNAMIC_TYPES, FIELD_SPEC, FLOAT, IMAGE, INT,
                       LOCALE, MAP_ITEM_ERROR, MEDIA_TYPES, RECORD_LABEL, TENANT_ID, TEXT, TIME_ZONE, VIDEO, Audio,
                       Document, DynamicValue, FieldSpec, Image, MapItemError, Video)
from .names import Locale, TenantId, TimeZone, TypeId
from .typeref import TypeRef, TypeRefSyntaxError, parse_type_ref


BUILTIN_ANNOTATIONS: Mapping[TypeId, object] = {
    TEXT: str, INT: int, FLOAT: float, BOOL: bool, DATE: _dt.date, DATE_TIME: _dt.datetime, TIME_ZONE: TimeZone,
    LOCALE: Locale, TENANT_ID: TenantId, IMAGE: Image, AUDIO: Audio, VIDEO: Video, DOCUMENT: Document,
    DYNAMIC: DynamicValue, FIELD_SPEC: FieldSpec, MAP_ITEM_ERROR: MapItemError,
}
Resolver = Callable[[TypeId], object]


class TypeModelError(Exception):
    pass


class ItemConstraints(Protocol):
    """What constrains one item of a field: text length, pattern, allowed values, numeric bounds."""
    @property
    def max_length(self) -> int | None: ...

    @property
    def pattern(self) -> str | None: ...

    @property
    def enum(self) -> list[str] | None: ...

    @property
    def minimum(self) -> int | float | None: ...

    @property
    def maximum(self) -> int | float | None: ...


class FieldSpecTypeIssue(StrEnum):
    UNKNOWN = "unknown"
    FORBIDDEN = "forbidden"


@dataclass(frozen=True, slots=True)
class FieldSpecTypeProblem:
    issue: FieldSpecTypeIssue
    message: str


def _ref(text: str) -> TypeRef:
    try:
        return parse_type_ref(text)
    except TypeRefSyntaxError as exc:
        raise TypeModelError(str(exc)) from None


def field_annotation(decl: Any, resolve: Resolver) -> object:
    """The annotation of a declared field: its type's, as a list or optional, with the declared constraints."""
    ref = _ref(decl.type)
    t: Any = resolve(ref.type_id)
    if ref.is_list:
        t = list[t]
    if ref.is_optional:
        t = Optional[t]
    return constrained(t, decl)


def record_model(name: str, fields: Sequence[Any], resolve: Resolver) -> type[BaseModel]:
    definitions: dict[str, Any] = {}
    for decl in fields:
        default = None if decl.type.endswith("?") else ...
        alias = decl.name if decl.name in RESERVED_NAMES else None
        definitions[attribute(decl.name)] = (field_annotation(decl, resolve),
                                             Field(default, alias=alias, description=getattr(decl, "description", None)))
    return create_model(name, __config__=GENERATED_CONFIG, **definitions)


def annotated_record(name: str, fields: Mapping[str, object]) -> type[BaseModel]:
    """A generated model from field names and annotations (each field required)."""
    definitions: dict[str, Any] = {attribute(k): (t, Field(alias=k if k in RESERVED_NAMES else None))
                                   for k, t in fields.items()}
    return create_model(name, __config__=GENERATED_CONFIG, **definitions)


def overridden_model(base: type[BaseModel], overrides: Mapping[str, tuple[object, Any]]) -> type[BaseModel]:
    """`base` with some fields given another annotation and field info (a Dynamic output made concrete)."""
    definitions: dict[str, Any] = dict(overrides)
    return create_model(base.__name__, __base__=base, **definitions)


def dynamic_record(name: str, fields: Sequence[FieldSpec], resolve: Resolver) -> type[BaseModel]:
    """The model a Dynamic value is validated with: one field per FieldSpec, a `Record` one a nested model
    named `<name><Field>`."""
    definitions: dict[str, Any] = {}
    for spec in fields:
        ref = _ref(spec.type)
        if ref.type_id == RECORD_LABEL:
            item: Any = dynamic_record(f"{name}{pascal(spec.name)}", spec.fields or (), resolve)
        else:
            item = resolve(ref.type_id)
        t: Any = list[item] if ref.is_list else item
        if ref.is_optional:
            t = Optional[t]
        t = constrained(t, spec)
        default = None if ref.is_optional else ...
        definitions[attribute(spec.name)] = (t, Field(default, alias=spec.name if spec.name in RESERVED_NAMES else None,
                                                       description=spec.description))
    return create_model(name, __config__=GENERATED_CONFIG, **definitions)


def field_spec_type_problem(type_id: TypeId, types: Mapping[TypeId, Any]) -> FieldSpecTypeProblem | None:
    """Why a type cannot shape a FieldSpec (unknown, or a media type, Dynamic, FieldSpec or union within)."""
    if type_id == RECORD_LABEL:
        return None
    if type_id not in BUILTIN_ANNOTATIONS and type_id not in types:
        return FieldSpecTypeProblem(FieldSpecTypeIssue.UNKNOWN,
                                    f"type {type_id} is neither built in nor declared in the project")
    blocked, seen, frontier = [], set(), [type_id]
    while frontier:
        current = frontier.pop()
        if current in seen:
            continue
        seen.add(current)
        spec = types.get(current)
        if current in MEDIA_TYPES or current in DYNAMIC_TYPES or isinstance(spec, specs.UnionTypeSpec):
            blocked.append(current)
        decls = list(getattr(spec, "fields", None) or []) if isinstance(spec, specs.RecordTypeSpec) else []
        for decl in decls:
            try:
                frontier.append(parse_type_ref(decl.type).type_id)
            except TypeRefSyntaxError:
                continue
    if not blocked:
        return None
    within = [t for t in sorted(blocked) if t != type_id]
    through = f" (contains {', '.join(within)})" if within else ""
    return FieldSpecTypeProblem(FieldSpecTypeIssue.FORBIDDEN, f"type {type_id}{through} is not allowed in FieldSpec: "
                                "media types, Dynamic, FieldSpec and unions are forbidden")


@dataclass(frozen=True, slots=True)
class TypeModels:
    """The built types of a project: annotation by type id, and why the others could not be built."""
    annotations: Mapping[TypeId, object]
    failures: Mapping[TypeId, str]
    specs: Mapping[TypeId, Any]
    registry: Registry | None = field(default=None, compare=False, repr=False)

    def __contains__(self, type_id: object) -> bool:
        return type_id in BUILTIN_ANNOTATIONS or type_id in self.annotations

    def resolve(self, type_id: TypeId) -> object:
        if type_id in BUILTIN_ANNOTATIONS:
            return BUILTIN_ANNOTATIONS[type_id]
        if type_id in self.annotations:
            return self.annotations[type_id]
        raise TypeModelError(self.failures.get(type_id, f"type {type_id} is not declared"))

    def model(self, type_id: TypeId) -> type[BaseModel]:
        annotation = self.resolve(type_id)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return annotation
        raise TypeModelError(f"type {type_id} is not a record: it has no Pydantic model")

    def annotation(self, ref: TypeRef) -> object:
        t: Any = self.resolve(ref.type_id)
        t = list[t] if ref.is_list else t
        return Optional[t] if ref.is_optional else t

    def field_annotation(self, decl: Any) -> object:
        return field_annotation(decl, self.resolve)

    def record(self, name: str, fields: Sequence[Any]) -> type[BaseModel]:
        return record_model(name, fields, self.resolve)

    def dynamic_record(self, name: str, fields: Sequence[FieldSpec]) -> type[BaseModel]:
        for spec in fields:
            problem = field_spec_type_problem(_ref(spec.type).type_id, self.specs)
            if problem is not None:
                raise TypeModelError(f"field {spec.name}: {problem.message}")
        return dynamic_record(name, fields, self.resolve)


def build_type_models(types: Mapping[TypeId, Any]) -> TypeModels:
    """Every buildable type of `types` (type id -> its TypeSpec), the others with their reason."""
    registry = Registry(dict(types.items()))
    built: dict[TypeId, object] = {}
    failures: dict[TypeId, str] = {}
    for type_id in types:
        try:
            built[type_id] = registry.named(type_id)
        except (UnknownType, LookupError, TypeError, ValueError) as exc:
            failures[type_id] = f"type {type_id}: {exc}"
    return TypeModels(built, failures, dict(types), registry)


_DROPPED = frozenset({"title", "description", "examples", "default", "discriminator", "$defs"})
_NAMED = frozenset({"properties", "patternProperties", "dependentSchemas"})


def normalized_schema(annotation: TypeForm[Any]) -> Any:
    """The JSON schema of an annotation with its definitions inlined and titles, descriptions, examples and
    defaults dropped: two annotations that validate alike compare equal."""
    document = TypeAdapter(annotation).json_schema()
    definitions = document.get("$defs", {})

    def walk(node: Any, expanding: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [walk(v, expanding) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            target = definitions.get(name)
            if name in expanding or not isinstance(target, dict):
                return {"$ref": name}
            return walk({**target, **{k: v for k, v in node.items() if k != "$ref"}}, expanding | {name})
        out = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key in _NAMED and isinstance(value, dict):
                out[key] = {name: walk(v, expanding) for name, v in value.items()}
            else:
                out[key] = walk(value, expanding)
        return out
    return walk(document, frozenset())


__all__ = ["BUILTIN_ANNOTATIONS", "GENERATED_CONFIG", "FieldSpecTypeIssue", "FieldSpecTypeProblem", "ItemConstraints",
           "TypeModelError", "TypeModels", "annotated_record", "build_type_models", "dynamic_record", "field_annotation",
           "field_spec_type_problem", "normalized_schema", "overridden_model", "record_model"]
