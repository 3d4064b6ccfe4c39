"""`aqven.spec.nodes`: AQVEN's names of this module (models.py holds them)."""
from __future__ import annotations

from .models import (
    CallNodeSpec, CodeNodeSpec, HumanNodeSpec, LlmNodeSpec, LoopNodeSpec, MapNodeSpec, NODE_SPEC_CLASSES,
    NarrowNodeSpec, NodeBase, NodeHeader, NodeSpec, NodeTag, ParallelNodeSpec, SwitchCase, SwitchNodeSpec,
    ToolNodeSpec, UNSUPPORTED_NODE_KINDS, inner_nodes,
)

__all__ = [
    "CallNodeSpec", "CodeNodeSpec", "HumanNodeSpec", "LlmNodeSpec", "LoopNodeSpec", "MapNodeSpec",
    "NODE_SPEC_CLASSES", "NarrowNodeSpec", "NodeBase", "NodeHeader", "NodeSpec", "NodeTag",
    "ParallelNodeSpec", "SwitchCase", "SwitchNodeSpec", "ToolNodeSpec", "UNSUPPORTED_NODE_KINDS",
    "inner_nodes",
]
