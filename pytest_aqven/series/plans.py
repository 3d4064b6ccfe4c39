"""Simulated launch-plan searches kept in `.aqven/plans/`, one small JSON file per set of inputs, so
`pytest --collect-only` can show a search that `aqven plan` ran earlier without running it again."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


class SearchCache:
    """A mapping from stats.plan.search_inputs(...) to (recommended cases, power); missing and damaged
    files read as absent (the search is then simply not shown, or run again)."""

    def __init__(self, root: Path):
        self.folder = root / ".aqven" / "plans"

    def _path(self, key: str) -> Path:
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()}.json"

    def get(self, key: str, default=None):
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            if data["inputs"] == key:
                return int(data["cases"]), float(data["power"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return default

    def __setitem__(self, key: str, value: tuple[int, float]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"cases": int(value[0]), "power": float(value[1]), "inputs": key}), encoding="utf-8")
        os.replace(tmp, path)       # atomic: parallel searches of the same inputs write the same content


def plan_experiments(root: Path, experiment_ids: list[str], split: str, *, cases: int | None = None,
                     repeats: int | None = None, family: str = "robust", jobs: int = 1) -> list[tuple[str, object]]:
    """(experiment id, its launch plan with the simulated search, or the error text) in the given order;
    the searches of several experiments run in `jobs` processes, each caching its result."""
    args = [(str(root), e, split, cases, repeats, family) for e in experiment_ids]
    if jobs <= 1 or len(args) <= 1:
        return [(e, _plan_one(*a)) for e, a in zip(experiment_ids, args)]
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(zip(experiment_ids, pool.map(_plan_one, *zip(*args))))


def _plan_one(root: str, experiment_id: str, split: str, cases, repeats, family):
    from ..experiments.plan import PlanError
    from ..project.loader import load_project
    from .lifecycle import SeriesRun
    project = load_project(Path(root))
    try:
        run = SeriesRun(project, project.experiments[experiment_id], split, cases=cases, repeats=repeats)
    except PlanError as exc:
        return f"{project.rel(project.experiments[experiment_id].file)}: error: {exc}"
    try:
        return run.launch_plan(family, simulate=True)
    finally:
        run.close_store()
