"""`aqven.spec.agent`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    AgentOutputSpec, AgentSpec, CapabilityOverride, DefaultOnTimeout, EscalateOnTimeout, FailOnTimeout,
    ModelSettingsSpec, OutputModeSetting, OutputModeSource, StructuredMode, SubagentSpec, TimeoutPolicy,
    ToolApprovalSpec,
)

__all__ = [
    "AgentOutputSpec", "AgentSpec", "CapabilityOverride", "DefaultOnTimeout", "EscalateOnTimeout",
    "FailOnTimeout", "ModelSettingsSpec", "OutputModeSetting", "OutputModeSource", "StructuredMode",
    "SubagentSpec", "TimeoutPolicy", "ToolApprovalSpec",
]
