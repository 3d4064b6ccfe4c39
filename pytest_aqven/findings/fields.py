"""A verdict's cells and estimates as a finding file writes them (document.py) and verify.py recomputes them."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import stats

IDENTITY = ("agent", "model", "inference", "prompt_sha256")     # what makes two judges the same judge


def judges_key(judges: list[dict]) -> tuple:
    """A set of judges by identity, comparable and hashable: the looks of a question are counted per key."""
    return tuple(sorted({tuple(str(j.get(k)) for k in IDENTITY) for j in judges}))


def judges_of(finding: dict) -> tuple:
    """The judges_key of the judges a finding speaks for: `scope.judges`, or in a finding written before that
    was recorded, its judge checks."""
    scope = finding.get("scope") or {}
    return judges_key(scope["judges"] if "judges" in scope else finding.get("judges") or [])


def estimate_dict(estimate: stats.Estimate) -> dict:
    def r(x: float | None) -> float | None:
        return None if x is None or x != x or x in (float("inf"), float("-inf")) else round(float(x), 6)
    return {"value": r(estimate.value), "low": r(estimate.low), "high": r(estimate.high),
            "method": estimate.method, "family": estimate.family, "cases": estimate.cases,
            "attempts": estimate.attempts, "n_eff": r(estimate.n_eff), "reliability": estimate.reliability,
            "degenerate": estimate.degenerate, "seed": estimate.seed, "resamples": estimate.resamples}


def cell_dict(cell: stats.Cell) -> dict:
    d = {"metric": cell.metric, "role": cell.role, "variant": cell.variant}
    if cell.baseline is not None:
        d["baseline"] = cell.baseline
    d["direction"] = cell.direction
    if cell.bound is not None:
        d["bound"] = cell.bound
        d["threshold"] = cell.threshold
    d.update({"margin": cell.margin, "relative": cell.relative, "edge": cell.edge,
              "estimate": estimate_dict(cell.estimate), "verdict": cell.verdict, "decided_by": cell.decided_by})
    if cell.counted_against is not None:   # the unmeasured attempts undid the measured verdict
        d["counted_against"] = estimate_dict(cell.counted_against)
    return d
