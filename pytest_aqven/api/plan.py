"""`aqven plan`: the launch plans of several experiments, with the simulated search, each run through a
SeriesRun (in `jobs` processes); the searches are cached by plans.SearchCache."""
from __future__ import annotations

from pathlib import Path

from ..experiments.plan import PlanError
from ..findings.spent import spent_for
from ..project.loader import NotRunnable, load_project, runnable
from ..series.lifecycle import SeriesRun
from ..stats.model import LaunchPlan


def plan_experiments(root: Path, experiment_ids: list[str], split: str, *, cases: int | None = None,
                     repeats: int | None = None, family: str = "robust", jobs: int = 1) -> list[tuple[str, LaunchPlan | str]]:
    """(experiment id, its launch plan with the simulated search, or the error text) in the given order;
    the searches of several experiments run in `jobs` processes, each caching its result."""
    args = [(str(root), e, split, cases, repeats, family) for e in experiment_ids]
    if jobs <= 1 or len(args) <= 1:
        return [(e, _plan_one(*a)) for e, a in zip(experiment_ids, args)]
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(zip(experiment_ids, pool.map(_plan_one, *zip(*args))))


def _plan_one(root: str, experiment_id: str, split: str, cases: int | None, repeats: int | None,
              family: str) -> LaunchPlan | str:
    project = load_project(Path(root))
    try:
        experiment = project.runnable_experiment(experiment_id)
        run = SeriesRun(runnable(project), experiment, split, cases=cases, repeats=repeats,
                        spent=spent_for(project, experiment, split))
    except (PlanError, NotRunnable) as exc:
        return f"{project.rel(project.experiments[experiment_id].file)}: error: {exc}"
    try:
        return run.launch_plan(family, simulate=True)
    finally:
        run.close_store()
