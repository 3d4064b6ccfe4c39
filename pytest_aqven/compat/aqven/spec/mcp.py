"""`aqven.spec.mcp`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    McpServerSpec, SecretHeader,
)

__all__ = [
    "McpServerSpec", "SecretHeader",
]
