"""`aqven.policies.control`: the built-in container policies (`use:` of a join, stop, select and
on_item_error) with their parameter models: the engine's own (engine/policies.py)."""
from __future__ import annotations

from ....engine.policies import (BestParams, DefaultParams, QuorumParams, StagnationParams, ThresholdParams, best,
                                 default, fail, first_success, join_all, join_any, last, quorum, scores, skip,
                                 stagnation, threshold)

__all__ = ["BestParams", "DefaultParams", "QuorumParams", "StagnationParams", "ThresholdParams", "best", "default",
           "fail", "first_success", "join_all", "join_any", "last", "quorum", "scores", "skip", "stagnation",
           "threshold"]
