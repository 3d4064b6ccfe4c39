"""The content of a finding: everything its verdict rests on."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import TYPE_CHECKING

from ..experiments import plan as planning
from ..experiments.plan import ENGINE_VERSION, canonical_hash
from ..project.model import Project
from ..stats.model import KEY_HEX, STATISTICS_VERSION, case_key
from . import judges
from .conclude import Conclusion
from .fields import cell_dict, estimate_dict, judges_key, judges_of
from .files import read_findings

if TYPE_CHECKING:
    from ..series.tally import SeriesTally


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat(timespec="seconds")


def build(project: Project, series: dict, conclusion: Conclusion, tally: SeriesTally) -> dict:
    """`tally`: the series' attempts (series/tally.py SeriesTally)."""
    from ..stats import evidence  # numpy: imported when a finding is built, not when a worker collects
    experiment = project.runnable_experiment(conclusion.experiment)
    spec = experiment.spec
    _, verdict, facts, table = conclusion.decided()
    what = spec.varies.what if spec.varies else None
    # the inputs are those the series started on (else the verdict is invalid and there is no finding): the
    # judges' and llm nodes' prompts hashed now are the ones the attempts read
    assemblies = planning.plan(project, experiment, series["split"], len(series["cases"]), series["repeats"]).variants
    variants = []
    for v in spec.variants:
        models = sorted(tally.models.get(v.id, ()))
        variants.append({
            "id": v.id,
            "changes": [{"node_id": n, "what": what, "value": val} for n, val in v.nodes.items()],
            "models": models,
            "llm_nodes": judges.llm_nodes(project, experiment, assemblies[v.id]),
            "metrics": {m: estimate_dict(e) for m, e in sorted(verdict.metrics.get(v.id, {}).items())},
        })
    spend = tally.spend_exact
    case_names_sha = canonical_hash(sorted(tally.case_names()))
    checks = [judges.identity(project, experiment, c) for c in spec.checks if c.is_judge]
    how = method(conclusion)
    measured = judges.spoken_for(project, experiment, checks, variants, how["question"])
    data = evidence.sufficient_data(table, facts, verdict.metrics)
    # the earlier looks at this question (the experiment on the same cases) that measured the same judges
    others = [f for _, f in read_findings(project.root, project.package) if f["experiment"] == experiment.id
              and f["series"] != conclusion.series_id and f["scope"]["case_names_sha256"] == case_names_sha
              and judges_of(f) == judges_key(measured)]
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
        "judges": checks,
        "scope": {
            "split": conclusion.split,
            "dataset": spec.cases.dataset,
            "tags": dict(spec.cases.tags),
            "cases": len(series["cases"]),
            "repeats": series["repeats"],
            "attempts": data["attempts"],         # a series stopped early: those its verdict was decided on
            "infra_errors": data["infra_errors"],
            "unpriced_attempts": tally.unpriced_attempts,
            "holdout_looks": 1 + len(others),
            **({"judges": measured} if measured else {}),
            "case_names_sha256": case_names_sha,
            # every case the series ran, by salted key: without the project database (a fresh clone) a held-out
            # run still knows these cases are spent
            # (stopped early: the cases an attempt reached; the others stay unspent)
            "case_keys": sorted(case_key(facts.salt, name)
                                for name in (tally.case_names() if facts.planned_cases else series["cases"])),
            **({"respent_from": list(series["respent_from"])} if series.get("respent_from") else {}),
            "started_at": _iso(tally.started_at),
            "finished_at": _iso(tally.finished_at),
            "engine_version": ENGINE_VERSION,
        },
        "inputs": dict(series["snapshot"]),
        "spend_usd": str(spend.quantize(Decimal("0.000001")).normalize()),
        "method": how,
        "data": data,
    }


def method(conclusion: Conclusion) -> dict:
    """How the verdict was computed: enough for `aqven check` to decide it again from `data`."""
    from ..stats import betting, evidence
    from ..stats.estimates import RESAMPLES
    from ..stats.intervals import ALPHA
    question, verdict, facts, _ = conclusion.decided()
    return {
        "statistics": STATISTICS_VERSION,
        "question": evidence.question_dict(question),
        "family": facts.family,
        "alpha": ALPHA,
        "salt": facts.salt,
        "case_key": f"sha256(salt, case name)[:{KEY_HEX}]",
        "betting": {"truncation": betting.TRUNCATION, "orders": betting.ORDERS},
        "bootstrap_resamples": RESAMPLES,
        "check_kinds": dict(sorted(facts.check_kinds.items())),
        **({"check_scales": {c: list(s) for c, s in sorted(facts.check_scales.items())}} if facts.check_scales else {}),
        "unvalidated_judges": dict(sorted(facts.unvalidated_judges.items())),
        "variants": list(facts.variants),
        **({"cost_bound": facts.cost_bound} if facts.cost_bound is not None else {}),
        # stopped early: decided on the betting bound at the first `cases` of the `planned` in the betting order
        **({"stop_early": {"cases": verdict.cells[0].estimate.cases, "planned": facts.planned_cases,
                           "bound": "betting"}} if facts.planned_cases and verdict.cells else {}),
    }
