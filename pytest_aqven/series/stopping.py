"""--aqven-stop-early: a series stops as soon as its verdict is decided (stats/early.py says when it is).

Its attempts run case by case in the betting order (every variant and repeat of a case together). The process
that sees every attempt's record (the only one, or the xdist controller) looks after each case whose every
attempt is recorded, at the longest complete prefix of that order. When the betting bound decides, it pauses
the series in the store as the cap and a permanent provider error do (pause reason `decided`, with the cases
decided on): no attempt of it starts after that, in any process or runner on the store; the attempts in flight
finish and are recorded but do not enter the verdict, which is decided on the prefix alone. Held-out cases no
attempt reached stay unspent. Light at import: collection orders the items with `run_order`.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import storage
from ..stats.model import case_key, order_key

if TYPE_CHECKING:
    from ..project.loader import Project
    from ..project.model import RunnableExperiment
    from .tally import SeriesTally


DECIDED = "decided"     # the pause reason of a series stopped early


def run_order(salt: str, names: Sequence[str]) -> list[str]:
    """The case names in the betting order a verdict takes them in (it names cases by their salted key)."""
    return sorted(names, key=lambda name: order_key(salt, case_key(salt, name)))


def stop_of(series: dict) -> dict | None:
    """The pause of a series stopped early ({reason, cases, planned, state}), else None."""
    pause = series.get("pause") or {}
    return pause if pause.get("reason") == DECIDED else None


def decided_text(series_id: str, pause: dict) -> str:
    """The one line every attempt of a stopped series that did not start is skipped with."""
    return (f"decided after {pause['cases']} of {pause['planned']} cases: series {series_id} is {pause['state']} on "
            f"the betting bound; its other attempts do not run (--aqven-stop-early)")


def decided_cases(series: dict, salt: str) -> list[str] | None:
    """The cases the verdict of a series stopped early is decided on (the prefix of the betting order), else None."""
    pause = stop_of(series)
    return None if pause is None else run_order(salt, series["cases"])[:int(pause["cases"])]


class _Watch:
    """One series a run looks at: its cases in the betting order, and how many of them are complete."""

    def __init__(self, project: Project, experiment: RunnableExperiment, series: dict, family: str) -> None:
        from .to_stats import facts_of, question_of

        self.root, self.series_id = project.root, series["series_id"]
        self.variants, self.repeats = list(series["variants"]), int(series["repeats"])
        self.facts = facts_of(project, experiment, self.series_id, series, family, planned_cases=len(series["cases"]))
        self.names = run_order(self.facts.salt, series["cases"])
        self.question = question_of(experiment.spec)
        self.complete = 0
        self.due = 1        # the complete prefix the next look waits for

    def look(self, tally: SeriesTally) -> dict | None:
        """The pause that stops the series when the longest complete prefix decides it, else None."""
        from ..stats import early

        every = (1 << (self.repeats + 1)) - 2       # repeats 1..R
        while self.complete < len(self.names) and all(
                (case := tally.cases.get((v, self.names[self.complete]))) is not None and case.seen & every == every
                for v in self.variants):
            self.complete += 1
        if self.complete < self.due or self.complete >= len(self.names):    # the last look is the final one
            return None
        # at most 200 looks: each builds its prefix's table, so a look after every one of 10,000 cases would be
        # quadratic; Ville's inequality holds over any looks, fewer only stop later (below 400 cases: every case)
        self.due = self.complete + max(1, len(self.names) // 200)
        table = tally.table(self.facts.salt, self.facts.check_kinds, set(self.names[:self.complete]))
        cells = early.decided(self.question, table, self.facts, len(self.names))
        if cells is None:
            return None
        return {"reason": DECIDED, "cases": self.complete, "planned": len(self.names), "state": early.state(*cells)}


class Looks:
    """The looks of one run at every series it reports (`after`, record by record)."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.watches: dict[str, _Watch | None] = {}     # None: it cannot stop, or it stopped already
        self.projects: dict[str, Project] = {}
        self.lines: list[str] = []                       # what the run says of its series (why one cannot stop)

    def after(self, tally: SeriesTally) -> None:
        """A record of the series of `tally` was folded: look, and stop the series when it is decided."""
        if tally.series_id not in self.watches:
            self.watches[tally.series_id] = self._watch(tally)
        watch = self.watches[tally.series_id]
        if watch is None:
            return
        pause = watch.look(tally)
        if pause is None:
            return
        from .db import Store
        store = Store(Path(watch.root))
        try:
            with store.transaction() as db:
                db.pause_series(watch.series_id, pause)
            self.watches[tally.series_id] = None
        except storage.ERRORS:      # the store is busy or away: the next record looks again
            watch.due = watch.complete
        finally:
            store.close()

    def _watch(self, tally: SeriesTally) -> _Watch | None:
        from ..project.loader import RunnableExperiment, load_project
        from ..stats import early
        from .db import Store

        project = self.projects.get(tally.root) or self.projects.setdefault(tally.root, load_project(Path(tally.root)))
        experiment = project.experiments.get(tally.experiment)
        store = Store(Path(tally.root))
        try:
            series = store.series(tally.series_id)
        finally:
            store.close()
        if not isinstance(experiment, RunnableExperiment) or not series or series.get("status") != "running":
            return None
        watch = _Watch(project, experiment, {**series, "series_id": tally.series_id}, self.family)
        reason = early.cannot_stop(watch.question, watch.facts)
        if reason is not None:
            self.lines.append(f"{tally.experiment} series {tally.series_id} runs to its planned cases: it cannot "
                              f"stop early: {reason}")
            return None
        return watch
