"""`aqven.spec.documents`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    SPEC_MODEL_BY_KIND, SpecDocument,
)

__all__ = [
    "SPEC_MODEL_BY_KIND", "SpecDocument",
]
