"""`aqven.spec.findings`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    FindingCell, FindingChange, FindingEstimate, FindingInputs, FindingJudge, FindingScope, FindingSpec,
    FindingVariant, SHA256_PATTERN, UUID_PATTERN,
)

__all__ = [
    "FindingCell", "FindingChange", "FindingEstimate", "FindingInputs", "FindingJudge", "FindingScope",
    "FindingSpec", "FindingVariant", "SHA256_PATTERN", "UUID_PATTERN",
]
