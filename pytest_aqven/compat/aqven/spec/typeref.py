"""`aqven.spec.typeref`: a type reference of a field (`Customer`, `Text[]`, `Resolution?`, `Text[]?`)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .names import TypeId

_HEAD = re.compile(r"[A-Z][A-Za-z0-9_]{0,62}")
_SUFFIX = re.compile(r"(?P<list>\[\])?(?P<optional>\?)?")


class TypeRefSyntaxError(ValueError):
    def __init__(self, text: str, position: int, reason: str) -> None:
        super().__init__(f"{text!r}, position {position}: {reason}")
        self.text = text
        self.position = position
        self.reason = reason


@dataclass(frozen=True, slots=True)
class TypeRef:
    type_id: TypeId
    is_list: bool
    is_optional: bool

    def __str__(self) -> str:
        return f"{self.type_id}{'[]' if self.is_list else ''}{'?' if self.is_optional else ''}"

    @property
    def item(self) -> "TypeRef":
        return TypeRef(self.type_id, is_list=False, is_optional=False)

    @property
    def required(self) -> "TypeRef":
        return TypeRef(self.type_id, is_list=self.is_list, is_optional=False)


def parse_type_ref(text: str) -> TypeRef:
    head = _HEAD.match(text)
    if head is None:
        raise TypeRefSyntaxError(text, 0, "a type reference starts with a PascalCase identifier")
    suffix = _SUFFIX.match(text, head.end())
    assert suffix is not None             # every part of _SUFFIX is optional: it matches anywhere
    if suffix.end() == len(text):
        return TypeRef(TypeId(head.group()), suffix.group("list") is not None, suffix.group("optional") is not None)
    rest = text[suffix.end():]
    if suffix.end() == head.end() and re.match(r"[A-Za-z0-9_]", rest):
        reason = "type id is longer than 63 characters"
    elif rest.startswith("[]"):
        reason = "nested lists T[][] and lists of optional values T?[] are not allowed"
    elif rest.startswith("?"):
        reason = "the ? suffix is allowed only once and only at the end"
    else:
        reason = "invalid character: expected the end of the type reference, [] or ?"
    raise TypeRefSyntaxError(text, suffix.end(), reason)


__all__ = ["TypeRef", "TypeRefSyntaxError", "parse_type_ref"]
