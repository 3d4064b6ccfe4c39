"""A verdict's cells and estimates as a finding file writes them (document.py) and verify.py recomputes them."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .. import stats


def estimate_dict(estimate: stats.Estimate) -> dict:
    def r(x):
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
