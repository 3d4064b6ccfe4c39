"""`aqven.spec.flow`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    ContractPredicate, FamiliesDistinct, FamilyDisjointFromInput, FieldBefore, FlowSpec,
)

__all__ = [
    "ContractPredicate", "FamiliesDistinct", "FamilyDisjointFromInput", "FieldBefore", "FlowSpec",
]
