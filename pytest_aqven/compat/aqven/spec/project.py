"""`aqven.spec.project`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    DataPolicy, OpenRouterRouting, PiiPolicy, ProjectPolicies, ProjectSpec, ProviderCapabilitiesSpec,
    ProviderKind, ProviderLimits, ProviderNameField, ProviderSpec, Rename, RenameKind, ResearchSettings,
    TrustPolicy,
)

__all__ = [
    "DataPolicy", "OpenRouterRouting", "PiiPolicy", "ProjectPolicies", "ProjectSpec",
    "ProviderCapabilitiesSpec", "ProviderKind", "ProviderLimits", "ProviderNameField", "ProviderSpec",
    "Rename", "RenameKind", "ResearchSettings", "TrustPolicy",
]
