"""Two-variant cells (compare / noninferior / guardrails)."""

from __future__ import annotations


def pair_cells(question, attempts, facts, metrics):
    raise NotImplementedError("compare/noninferior verdicts arrive in step 2")
