"""`aqven.spec.fields`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    BoundField, FieldBinding, FieldDecl, FieldHead, InputField, OutputField,
)

__all__ = [
    "BoundField", "FieldBinding", "FieldDecl", "FieldHead", "InputField", "OutputField",
]
