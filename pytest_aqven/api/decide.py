"""Deciding series: the library under the pytest layer's session end and `aqven series decide <id>`.

`decide` turns a series' attempts into a `Decided`: its conclusion (verdict, cells, note), its finding
published, and its entry as every report shows it (report/data.py). It never raises for a series: what
could not be decided or recorded is the `error` of its Decided. What only the pytest session end needs (the
order in which it decides its series, the spend lines, cancelling, the launch plan lines) is plugin/session.py's.
"""
from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from .. import storage
from ..findings.conclude import Conclusion, conclude
from ..findings.files import FindingsRefused
from ..findings.publish import settle, write_finding_for
from ..findings.spent import spent_for
from ..project.loader import Project, RunnableExperiment, runnable
from ..record import AttemptRecord
from ..report import data
from ..series.db import Store
from ..series.lifecycle import SeriesRun
from ..series.tally import SeriesTally


@dataclass(frozen=True)
class Decided:
    """One series decided: `conclusion` and `entry` are None when `error` says why it could not be."""
    series_id: str
    conclusion: Conclusion | None = None
    entry: dict | None = None            # the series as data (report/data.py: --aqven-json, hooks, summaries)
    refused: str | None = None           # why the finding's files are not written (the database holds it)
    error: str | None = None

    def parts(self) -> tuple[Conclusion, dict]:
        """(conclusion, entry) of a series that was decided (its `error` is None)."""
        if self.conclusion is None or self.entry is None:
            raise ValueError(f"series {self.series_id} was not decided: {self.error}")
        return self.conclusion, self.entry

    @property
    def state(self) -> str | None:
        """Its verdict word for fail-on: open without a verdict (a look's state is None: open too), invalid when
        its series stopped at a permanent provider error."""
        conclusion = self.conclusion
        if conclusion is not None and conclusion.halted:
            return "invalid"
        return "open" if conclusion is None or conclusion.verdict is None else conclusion.state

    def section(self) -> str:
        """What the verdict test shows (its "aqven verdict" section) and `aqven series decide` prints."""
        conclusion, entry = self.parts()
        text = conclusion.verdict.text if conclusion.verdict else conclusion.note
        return "\n".join([f"verdict {data.state_word(conclusion)}: {text}",
                          *(f"warning: {w}" for w in entry["warnings"]),
                          *([f"next: {entry['next']}"] if entry["next"] else [])])


def decide(project: Project, series_id: str, tally: SeriesTally | None = None, *, family: str = "robust",
           reread: bool = False, went_down: tuple[str, ...] = (), reports_root: Path | None = None) -> Decided:
    """Decide the series from `tally` (its attempts as this run reported them) or, without one or with
    `reread` (some records of this run are not the ones the ledger counts), from the database; publish its
    finding. A verdict rests only on committed records: an attempt of `tally` the database does not hold (its
    process was killed between its report and its group commit) leaves the series undecided and running, for
    the same command to run it again. `went_down`: the xdist workers of this run that went down mid-run (then
    each attempt is looked up, not only counted). `reports_root`: what the entry's project path is relative to
    (pytest's rootdir; default: the project's root)."""
    refused = None
    with ExitStack() as closing:       # one store, one connection, for the whole decision
        try:
            store = Store(project.root)
            closing.callback(store.close)
            attempts: SeriesTally | list[AttemptRecord]
            if tally is None or reread or went_down:
                records = _stored(store, series_id)
                if tally is None:
                    tally = _tally_of(store, series_id, records)
                missing = len(tally.attempts() - {(r.variant, r.case, r.repeat) for r in records})
                attempts = records if reread else tally
            else:
                attempts = tally
                missing = tally.done - _committed(store, series_id)
            if missing > 0:
                return Decided(series_id, error=unrecorded(series_id, missing, went_down, reread))
            decided_from = attempts if isinstance(attempts, SeriesTally) else SeriesTally.of(attempts)
            conclusion = conclude(project, store, series_id, decided_from, family=family)
            if conclusion.verdict is not None:
                settle(store, project, conclusion, decided_from, family)
            if conclusion.verdict is not None and conclusion.unrecorded is None:
                try:
                    conclusion.finding = write_finding_for(project, store, conclusion)
                except FindingsRefused as exc:   # the finding stays recorded in the database; nothing overwritten
                    refused = str(exc)
                except OSError as exc:           # a full disk, an unwritable folder: the database has the finding
                    refused = unwritten(project, conclusion, exc)
        except (OSError,) + storage.ERRORS as exc:   # the decision could not be recorded: nothing is lost
            return Decided(series_id, error=(
                f"pytest-aqven could not record the decision of series {series_id}: {type(exc).__name__}: {exc}. "
                f"Free space on the project's disk (or make .aqven/ writable), then run the same command: it decides "
                f"the series again from its recorded attempts, none runs again."))
        except Exception as exc:  # our bug: said as the series' error, the other series are still decided
            return Decided(series_id,
                           error=f"pytest-aqven could not decide series {series_id}: {type(exc).__name__}: {exc}")
        entry = _entry(project, store, conclusion, tally, family, reports_root or project.root)
    return Decided(series_id, conclusion, entry, refused)


def _stored(store: Store, series_id: str) -> list[AttemptRecord]:
    return [AttemptRecord.from_wire(wire) for wire in store.attempts(series_id)]


def _committed(store: Store, series_id: str) -> int:
    """The series' finished attempts: its ledger rows (a finish writes its row and its record together), read
    from the one row of running totals (a count of the attempts would read every record's pages)."""
    with store.read() as db:
        totals = db.spend_totals(series_id)
    return totals[2] if totals else 0


def unrecorded(series_id: str, missing: int, went_down: tuple[str, ...], discarded: bool = False) -> str:
    """Why a series is not decided: attempts reported to this run that the database does not hold."""
    them = "them" if missing != 1 else "it"
    if went_down:
        cause = f"xdist worker {', '.join(went_down)} went down before committing {them}"
    elif discarded:     # this runner was suspended past the lease: the runner that took the claims is not done
        claims = "their claims" if missing != 1 else "its claim"
        cause = f"another runner took {claims} while this run was suspended and has not recorded {them} yet"
    else:
        cause = f"{'their finishes were' if missing != 1 else 'its finish was'} never committed"
    return (f"series {series_id} is not decided: {missing} attempt{'s' if missing != 1 else ''} this run reported "
            f"{'are' if missing != 1 else 'is'} not recorded in the project database ({cause}); the series stays "
            f"running: run the same command, which runs {them} again and decides it (no recorded attempt runs again)")


def _tally_of(store: Store, series_id: str, records: list[AttemptRecord]) -> SeriesTally:
    """The tally of a series' stored records (a look's keeps them, for its table)."""
    try:
        with store.read() as db:
            kind = db.series_question(series_id)
    except storage.ERRORS:
        kind = None
    series = store.series(series_id) or {}
    experiment = series.get("experiment_id", "")
    tally = SeriesTally(series_id, str(store.root), f"experiments/{experiment}/experiment.yaml", experiment,
                        series.get("split", ""), keep_records=kind in ("look", None))
    for record in records:
        tally.add(record)
    return tally


def unwritten(project: Project, conclusion: Conclusion, exc: OSError) -> str:
    """Why the finding's files are not written, and what publishes them (the database holds the finding)."""
    where = Path(exc.filename).parent if getattr(exc, "filename", None) else project.root / "experiments" / \
        conclusion.experiment / "findings"
    try:
        where_text = where.relative_to(project.root).as_posix() or "the module root"
    except ValueError:
        where_text = str(where)
    return (f"{exc.strerror or exc}: {where_text}. Free space on that disk (or make {where_text} writable), then run "
            f"the same command: it publishes the recorded finding; no attempt runs again.")


def _entry(project: Project, store: Store, conclusion: Conclusion, tally: SeriesTally, family: str,
           reports_root: Path) -> dict:
    row = store.series(conclusion.series_id) or {}
    found = project.experiments.get(conclusion.experiment)
    experiment = found if isinstance(found, RunnableExperiment) else None
    layout = {"question": experiment.spec.question.kind if experiment else None,
              "variants": row.get("variants", []), "cases": len(row.get("cases", [])), "repeats": row.get("repeats")}
    plan = None
    if experiment and conclusion.state in ("refuted", "inconclusive", "signal"):
        plan = data.plan_entry(quick_plan(project, store, experiment, conclusion.split, layout, family,
                                          observed=conclusion.series_id))
    # the series' own cap (the one its series line and a pause name), not the project's
    cap = row.get("cap_usd") or runnable(project).spec.research.spend_cap_usd
    return data.series_entry(conclusion, tally, layout, float(cap), plan,
                             Path(os.path.relpath(Path(tally.root), reports_root)).as_posix())


def quick_plan(project: Project, store: Store, experiment: RunnableExperiment, split: str, layout: dict, family: str,
               observed: str | None = None):
    """The launch plan in closed form (instant), with this experiment's history read from `store` (the series
    `observed`: a verdict's figure at the rates observed is its own series')."""
    run = SeriesRun(runnable(project), experiment, split, cases=layout["cases"] or None, repeats=layout["repeats"],
                    spent=spent_for(project, experiment, split, store.read))
    return run.launch_plan(family, simulate=False, observed=observed, store=store)


def question_kind(root: str, series_id: str) -> str | None:
    try:
        with storage.peek(Path(root)) as db:
            return None if db is None else db.series_question(series_id)
    except storage.ERRORS:
        return None
