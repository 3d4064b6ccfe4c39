"""`aqven.spec.tool`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    JobWaitSpec, McpToolSource, ToolSpec,
)

__all__ = [
    "JobWaitSpec", "McpToolSource", "ToolSpec",
]
