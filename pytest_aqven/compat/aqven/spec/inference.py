"""`aqven.spec.inference`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    AllowedSetSpec, CheckSpec, DisplayFormatterSpec, ExampleSpec, InferenceDisplaySpec, InferenceSpec,
    VariantRef, VariantSlot,
)

__all__ = [
    "AllowedSetSpec", "CheckSpec", "DisplayFormatterSpec", "ExampleSpec", "InferenceDisplaySpec",
    "InferenceSpec", "VariantRef", "VariantSlot",
]
