"""Static types of flow values: the type a reference reads, and whether a value of one type can be
validated as another.

The checker's type pass asks both questions of the types registry, the one the engine builds its
pydantic models from, so the two read every type the same way. A shape is a type id of the registry
or a built-in (`Draft`, `Text`; list and optional marks removed), a `Seq` (a list of a shape), a `Rec`
(the out fields of a node, which have no type id), or None when it cannot be known statically.

Only definite mismatches count: a value that may fit (a Text into an enum, a Float into a Score, a
record into a union) is the engine's to validate at run time. Optional marks are ignored: a null the
declaration allows is a run-time matter too."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from . import specs
from .types import Registry, UnknownType


@dataclass(frozen=True)
class Rec:
    """An anonymous record: the out fields of a node or the in fields of an inference."""
    label: str                                   # how messages name it: "the output of node triage"
    fields: tuple[tuple[str, "Shape"], ...]
    optional: frozenset[str] = frozenset()       # fields declared `T?`

    def get(self, name: str) -> Any:
        return dict(self.fields).get(name, MISSING)


@dataclass(frozen=True)
class Seq:
    item: "Shape"


Shape = Union[str, Rec, Seq, None]
MISSING = object()

TEXT = ("Text", "TimeZone", "Locale", "TenantId")
OPAQUE = ("Json", "Dynamic", "DynamicValue", "FieldSpec")
MEDIA = ("Image", "Audio", "Video", "Document")
MAP_ITEM_ERROR = (("index", "Int"), ("code", "Text"), ("message", "Text"))
KIND_WORDS = {"text": "text", "int": "a whole number", "float": "a number", "bool": "a true/false value",
              "date": "a date", "datetime": "a date and time", "record": "a record", "union": "a union value",
              "enum": "an enum value", "media": "media"}
LIQUID_PROPERTIES = ("size", "first", "last")     # read on any list or text in a template


def of(registry: Registry, ref: str | None) -> Shape:
    """The shape of a type reference (`Draft[]?` -> Seq("Draft")); None when it does not parse."""
    if ref is None:
        return None
    try:
        base, lists, _ = registry.parse_ref(ref)
    except UnknownType:
        return None
    shape: Shape = base
    for _ in range(lists):
        shape = Seq(shape)
    return shape


def record(label: str, registry: Registry, fields) -> Rec:
    """A Rec of declarations (anything with .name and .type)."""
    fields = list(fields)
    return Rec(label, tuple((f.name, of(registry, f.type)) for f in fields),
               frozenset(f.name for f in fields if f.type.endswith("?")))


def common(shapes: list[Shape], label: str) -> Shape:
    """The one shape all of these have (records compared by their fields), or None."""
    keys = {(s.fields, s.optional) if isinstance(s, Rec) else s for s in shapes}
    if len(keys) != 1 or None in keys:
        return None
    first = shapes[0]
    return Rec(label, first.fields, first.optional) if isinstance(first, Rec) else first


def describe(shape: Shape) -> str:
    if isinstance(shape, Seq):
        if shape.item is None:
            return "a list"
        return f"a list of {shape.item.label}" if isinstance(shape.item, Rec) else describe(shape.item) + "[]"
    if isinstance(shape, Rec):
        return shape.label
    return shape or "unknown"


def kind(registry: Registry, shape: Shape) -> str | None:
    """What a value of the shape is: text, int, float, bool, date, datetime, enum, record, union, media,
    list; None when anything may be there (Json, Dynamic, an unknown or unreadable type)."""
    if isinstance(shape, Seq):
        return "list"
    if isinstance(shape, Rec):
        return "record"
    if shape is None or shape in OPAQUE or shape in registry.unreadable:
        return None
    if shape in TEXT:
        return "text"
    if shape in MEDIA:
        return "media"
    builtin = {"Int": "int", "Float": "float", "Score": "float", "Bool": "bool", "Date": "date",
               "DateTime": "datetime", "MapItemError": "record"}.get(shape)
    if builtin:
        return builtin
    spec = registry.specs.get(shape)
    if isinstance(spec, specs.RecordTypeSpec):
        return "record"
    if isinstance(spec, specs.UnionTypeSpec):
        return "union"
    if isinstance(spec, specs.EnumTypeSpec):
        return "enum"
    if isinstance(spec, specs.IdTypeSpec):
        return "text"
    if isinstance(spec, specs.ValueTypeSpec):
        return {"Text": "text", "Int": "int", "Float": "float", "Bool": "bool", "Date": "date",
                "DateTime": "datetime"}[spec.base]
    return None


def fields(registry: Registry, shape: Shape) -> dict[str, Shape] | None:
    """Field name -> shape of a record shape, or None when it is not a record the registry describes."""
    if isinstance(shape, Rec):
        return dict(shape.fields)
    if shape == "MapItemError":
        return {name: t for name, t in MAP_ITEM_ERROR}
    spec = registry.specs.get(shape) if isinstance(shape, str) else None
    if isinstance(spec, specs.RecordTypeSpec):
        return {f.name: of(registry, f.type) for f in spec.fields}
    return None


def enum_values(registry: Registry, shape: Shape) -> list[str] | None:
    spec = registry.specs.get(shape) if isinstance(shape, str) else None
    return [v.value for v in spec.values] if isinstance(spec, specs.EnumTypeSpec) else None


def switch_keys(registry: Registry, shape: Shape) -> list[str] | None:
    """The case keys a switch on a value of this shape can reach: an enum's values, a union's variant
    names, true and false; None for any other value."""
    spec = registry.specs.get(shape) if isinstance(shape, str) else None
    if isinstance(spec, specs.UnionTypeSpec):
        return [v.name for v in spec.variants]
    if shape == "Bool" or kind(registry, shape) == "bool":
        return ["true", "false"]
    return enum_values(registry, shape)


def step(registry: Registry, shape: Shape, seg: str | int) -> Shape:
    """The shape one step (`.field` or `[n]`) further; None when unknown (a wrong path is reported by
    the rule that reads paths)."""
    if isinstance(seg, int):
        return shape.item if isinstance(shape, Seq) else None
    found = fields(registry, shape)
    if found is not None:
        return found.get(seg)
    spec = registry.specs.get(shape) if isinstance(shape, str) else None
    if isinstance(spec, specs.UnionTypeSpec):
        if seg == spec.discriminator:
            return "Text"
        types = {of(registry, f.type) for v in spec.variants for f in v.fields if f.name == seg}
        return types.pop() if len(types) == 1 else None
    return None


def at(registry: Registry, shape: Shape, steps: tuple) -> Shape:
    """The shape at a path of steps; `[*]` lifts the rest over a list."""
    for i, seg in enumerate(steps):
        if seg == "*":
            return Seq(at(registry, shape.item, steps[i + 1:])) if isinstance(shape, Seq) else None
        shape = step(registry, shape, seg)
        if shape is None:
            return None
    return shape


def mismatch(registry: Registry, source: Shape, target: Shape, depth: int = 0) -> str | None:
    """Why a value of `source` never validates as `target`, or None when it does or may."""
    s, t = kind(registry, source), kind(registry, target)
    if s is None or t is None or depth > 8:
        return None
    if s == "list" or t == "list":
        if not (isinstance(source, Seq) and isinstance(target, Seq)):     # kind "list" is a Seq
            return (f"{describe(source)} is a list, but {describe(target)} is one value" if s == "list" else
                    f"{describe(source)} is one value, but {describe(target)} is a list")
        problem = mismatch(registry, source.item, target.item, depth + 1)
        return problem and f"its items: {problem}"
    if source == target:
        return None
    if s == "record" and t == "record":
        return _record_mismatch(registry, source, target, depth)
    if s == t:
        if s == "enum":
            have, want = enum_values(registry, source) or [], enum_values(registry, target) or []  # both enums
            extra = [v for v in have if v not in want]
            return extra and (f"{describe(target)} has no value {', '.join(extra)} of {describe(source)} (its values: "
                              f"{', '.join(want)})") or None
        if s == "media":
            return f"{source} media is not {target} media"
        return None                                  # text, numbers, dates, unions: the engine decides
    if (s, t) in (("enum", "text"), ("text", "enum"), ("int", "float"), ("date", "datetime"),
                  ("datetime", "date"), ("text", "date"), ("text", "datetime"), ("date", "text"),
                  ("datetime", "text"), ("record", "union"), ("union", "record")):
        return None                                  # fits, or fits when the value is right
    return f"{KIND_WORDS[s]} is not {KIND_WORDS[t]}"


def _record_mismatch(registry: Registry, source: Shape, target: Shape, depth: int) -> str | None:
    have, want = fields(registry, source), fields(registry, target)
    if have is None or want is None:
        return None
    missing = [n for n in want if n not in have and not _optional(registry, target, n)]
    if missing:
        return f"{describe(source)} has no field {', '.join(missing)} of {describe(target)}"
    extra = [n for n in have if n not in want]
    if extra:
        return f"{describe(target)} has no field {', '.join(extra)} of {describe(source)}"
    for name, shape in have.items():
        problem = mismatch(registry, shape, want[name], depth + 1)
        if problem:
            return f"field {name}: {problem}"
    return None


def _optional(registry: Registry, shape: Shape, name: str) -> bool:
    """A field the record may leave out (declared `T?`)."""
    if isinstance(shape, Rec):
        return name in shape.optional
    spec = registry.specs.get(shape) if isinstance(shape, str) else None
    if isinstance(spec, specs.RecordTypeSpec):
        return any(f.name == name and f.type.endswith("?") for f in spec.fields)
    return False


def numeric(registry: Registry, shape: Shape) -> bool | None:
    """A number (what loop policies read), not one, or None when unknown."""
    k = kind(registry, shape)
    return None if k is None else k in ("int", "float")
