"""`aqven.spec.policy`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    EvaluatorRef, PolicyRef,
)

__all__ = [
    "EvaluatorRef", "PolicyRef",
]
