"""Type references as the checker reads them: is a type known, what fields does it have, does a
path of steps ($x.a[0].b) lead somewhere in it."""
from __future__ import annotations

from collections.abc import Set

from ..project import specs
from ..project.types import BUILTINS, Registry, UnknownType

# values whose shape is only known at run time, or built-in records the checker does not walk into
OPAQUE = {"Json", "Dynamic", "DynamicValue", "FieldSpec", "MapItemError", "Image", "Audio", "Video", "Document"}


class TypeInfo:
    def __init__(self, registry: Registry, unreadable: Set[str] = frozenset()) -> None:
        self.registry = registry
        self.unreadable = unreadable          # type files that exist but did not load

    def problem(self, ref: str) -> str | None:
        """Why `ref` is not a usable type reference, or None."""
        try:
            base, _, _ = self.registry.parse_ref(ref)
        except UnknownType as exc:
            return str(exc)
        if base not in BUILTINS and base not in OPAQUE and base not in self.registry.specs and base not in self.unreadable:
            return f"type {base} is neither a built-in type nor a type of types/"
        return None

    def known_names(self) -> str:
        return ", ".join(sorted(self.registry.specs)) or "none yet"

    def fields(self, ref: str | None) -> dict[str, str] | None:
        """Field name -> type ref of a record type (not a list), or None when unknown or not a record."""
        if ref is None:
            return None
        try:
            base, lists, _ = self.registry.parse_ref(ref)
        except UnknownType:
            return None
        spec = self.registry.specs.get(base)
        if lists or not isinstance(spec, specs.RecordTypeSpec):
            return None
        return {f.name: f.type for f in spec.fields}

    def required(self, ref: str | None) -> list[str]:
        return [name for name, t in (self.fields(ref) or {}).items() if not t.endswith("?")]

    def walk(self, ref: str, steps: tuple) -> tuple[str, list[str]] | None:
        """None if the steps lead into the type (or its shape is unknown); else (problem, names that fit)."""
        current = ref
        for step in steps:
            try:
                base, lists, _ = self.registry.parse_ref(current)
            except UnknownType:
                return None
            if step == "*" or isinstance(step, int):
                if not lists:
                    return f"{current} is not a list, so it has no items", []
                current = base + "[]" * (lists - 1)
                continue
            if lists:
                return f"{current} is a list: read an item with [n] or every item with [*] before .{step}", []
            if base in OPAQUE or base not in self.registry.specs:
                return None if base in OPAQUE or base not in BUILTINS else (f"{base} has no fields", [])
            spec = self.registry.specs[base]
            if isinstance(spec, specs.UnionTypeSpec):
                names = {spec.discriminator: "Text"}
                for v in spec.variants:
                    names.update({f.name: f.type for f in v.fields})
                if step not in names:
                    return f"{base} has no field {step} in any of its variants", list(names)
                current = names[step]
                continue
            if not isinstance(spec, specs.RecordTypeSpec):
                article = "an" if spec.type[0] in "aeiou" else "a"
                return f"{base} is {article} {spec.type} type and has no fields", []
            names = {f.name: f.type for f in spec.fields}
            if step not in names:
                return f"{base} has no field {step}", list(names)
            current = names[step]
        return None
