"""`aqven.spec.common`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    Constraints, Limits, SecretBinding, SpecModel,
)

__all__ = [
    "Constraints", "Limits", "SecretBinding", "SpecModel",
]
