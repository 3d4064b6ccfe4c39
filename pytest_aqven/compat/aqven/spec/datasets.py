"""`aqven.spec.datasets`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    DatasetCase, DatasetFile,
)

__all__ = [
    "DatasetCase", "DatasetFile",
]
