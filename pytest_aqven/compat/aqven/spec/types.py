"""`aqven.spec.types`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    AllowedSetMode, CodeFormat, EnumType, EnumValue, IdType, RecordType, TypeHeader, TypeSpec, UnionType,
    UnionVariant, ValueBase, ValueHead, ValueType,
)

__all__ = [
    "AllowedSetMode", "CodeFormat", "EnumType", "EnumValue", "IdType", "RecordType", "TypeHeader",
    "TypeSpec", "UnionType", "UnionVariant", "ValueBase", "ValueHead", "ValueType",
]
