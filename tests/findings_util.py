"""Held-out series with made-up attempt records, concluded and published by the real code (DB, verdict,
finding files, FINDINGS.md): what a run does after its attempts, without running a flow."""
from __future__ import annotations

import hashlib
from pathlib import Path

from pytest_aqven.findings.conclude import conclude
from pytest_aqven.findings.publish import settle, write_finding_for
from pytest_aqven.findings.spent import spent
from pytest_aqven.project.loader import load_project
from pytest_aqven.series.db import Store, attempt_row
from pytest_aqven.series.lifecycle import SeriesRun
from pytest_aqven.series.tally import SeriesTally

from . import projects


def make_project(root: Path, experiments: dict[str, dict] | None = None, n_cases: int = 40) -> Path:
    return projects.make(root, n_cases, experiments=experiments or {"rate_ok": {}})


def passes_with(rate: float):
    """A pass/fail per (case, repeat) from a hash: about `rate` of attempts pass."""
    def outcome(case: str, repeat: int) -> bool:
        return hashlib.sha256(f"{case}|{repeat}".encode()).digest()[0] < rate * 256
    return outcome


def records_for(run: SeriesRun, series_id: str, passed, t0: float = 1_790_000_000.0) -> list[dict]:
    out = []
    for case in run.plan.cases:
        for repeat in range(1, run.plan.repeats + 1):
            for variant in run.plan.variants:
                ok = passed(case.name, repeat)
                out.append({
                    "series_id": series_id, "experiment": run.experiment.id, "variant": variant, "case": case.name,
                    "repeat": repeat, "split": run.plan.split, "outcome": "ok", "passed": ok,
                    "checks": {"label": {"state": "passed" if ok else "failed", "value": float(ok), "reason": None}},
                    "cost_usd": 0.0002, "check_cost_usd": 0.0, "unpriced_calls": 0, "latency_ms": 100.0 + repeat,
                    "tokens_in": 20, "tokens_out": 5, "schema_valid_first_try": True, "models": {"label": "sim:tiny"},
                    "error_code": None, "error_message": None, "started_at": t0 + len(out),
                    "finished_at": t0 + len(out) + 1, "trace": {},
                })
    return out


def held_out(root: Path, experiment: str = "rate_ok", passed=passes_with(0.97)) -> tuple[str, list[dict]]:
    """Open (or continue) the held-out series of the experiment and save every attempt's record. A second
    look at cases that gave a finding is --aqven-respend-holdout's (the store refuses any other)."""
    project = load_project(root)
    exp = project.experiments[experiment]
    run = SeriesRun(project, exp, "holdout", spent=spent(project, exp), respend=True)
    series_id = run.series_id
    records = records_for(run, series_id, passed)
    save(run.store, [r for r in records
                     if run.store.finished_attempt(series_id, r["variant"], r["case"], r["repeat"]) is None])
    run.store.close()
    return series_id, records


def save(store: Store, records: list[dict]) -> None:
    """Finished attempt records, as the ledger writes them."""
    with store.transaction() as db:
        db.save_attempts([attempt_row(r) for r in records])


def concluded(root: Path, series_id: str, records: list, *, publish: bool = False):
    """The series decided and its end recorded (with its finding, published when asked), on one store: what
    decision.decide does for a run, without the report's entry."""
    project = load_project(root)
    store = Store(root)
    try:
        tally = SeriesTally.of(records)
        conclusion = conclude(project, store, series_id, tally)
        if conclusion.verdict is not None:
            settle(store, project, conclusion, tally, "robust")
            if publish:
                conclusion.finding = write_finding_for(project, store, conclusion)
        return conclusion
    finally:
        store.close()


def decide_and_publish(root: Path, series_id: str, records: list[dict]):
    return concluded(root, series_id, records, publish=True)


def finding(root: Path, experiment: str = "rate_ok", passed=passes_with(0.97)):
    series_id, records = held_out(root, experiment, passed)
    return decide_and_publish(root, series_id, records)
