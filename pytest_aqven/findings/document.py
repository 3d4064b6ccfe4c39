"""The content of a finding: everything its verdict rests on."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

from ..experiments.plan import ENGINE_VERSION, canonical_hash
from ..project.loader import Project
from .files import read_findings
from ..series.conclude import Conclusion, cell_dict, estimate_dict


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds")


def build(project: Project, series: dict, conclusion: Conclusion, records: list[dict]) -> dict:
    experiment = project.experiments[conclusion.experiment]
    spec = experiment.spec
    verdict = conclusion.verdict
    what = spec.varies.what if spec.varies else None
    variants = []
    for v in spec.variants:
        mine = [r for r in records if r["variant"] == v.id]
        models = sorted({m for r in mine for m in r["models"].values()})
        variants.append({
            "id": v.id,
            "changes": [{"node_id": n, "what": what, "value": val} for n, val in v.nodes.items()],
            "models": models,
            "metrics": {m: estimate_dict(e) for m, e in sorted(verdict.metrics.get(v.id, {}).items())},
        })
    spend = sum(Decimal(repr(r["cost_usd"])) + Decimal(repr(r["check_cost_usd"])) for r in records)
    case_names_sha = canonical_hash(sorted({r["case"] for r in records}))
    others = [f for _, f in read_findings(project.root) if f["experiment"] == experiment.id
              and f["series"] != conclusion.series_id and f["scope"]["case_names_sha256"] == case_names_sha]
    return {
        "apiVersion": "aqven/v1",
        "kind": "Finding",
        "experiment": experiment.id,
        "series": conclusion.series_id,
        "description": spec.description,
        "failure_mode": spec.failure_mode,
        "question": spec.question.kind,
        "state": verdict.state,
        "reason": verdict.reason,
        "statement": verdict.text,
        "family": series.get("family", "robust"),
        "cells": [cell_dict(c) for c in verdict.cells],
        "variants": variants,
        "judges": [{"check": c.id, "inference": c.inference, "agent": c.agent, "validated_by": c.validated_by}
                   for c in spec.checks if c.is_judge],
        "scope": {
            "split": conclusion.split,
            "dataset": spec.cases.dataset,
            "tags": dict(spec.cases.tags),
            "cases": len(series["cases"]),
            "repeats": series["repeats"],
            "attempts": len(records),
            "infra_errors": sum(1 for r in records if r["outcome"] == "infra_error"),
            "unpriced_attempts": sum(1 for r in records if r["unpriced_calls"]),
            "holdout_looks": 1 + len(others),
            "case_names_sha256": case_names_sha,
            "started_at": _iso(min(r["started_at"] for r in records)),
            "finished_at": _iso(max(r["finished_at"] for r in records)),
            "engine_version": ENGINE_VERSION,
        },
        "inputs": dict(series["snapshot"]),
        "spend_usd": str(spend.quantize(Decimal("0.000001")).normalize()),
    }
