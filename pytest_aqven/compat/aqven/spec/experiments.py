"""`aqven.spec.experiments`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    CaseSelection, CompareQuestion, ExperimentCheck, ExperimentPlan, ExperimentSpec, ExperimentSubject,
    Guardrail, LookQuestion, NoninferiorQuestion, Question, ThresholdQuestion, VariantSpec,
)

__all__ = [
    "CaseSelection", "CompareQuestion", "ExperimentCheck", "ExperimentPlan", "ExperimentSpec",
    "ExperimentSubject", "Guardrail", "LookQuestion", "NoninferiorQuestion", "Question",
    "ThresholdQuestion", "VariantSpec",
]
