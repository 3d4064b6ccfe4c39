"""Deciding series: the library under the pytest layer's session end and `aqven series decide <id>`.

`decide` turns a series' attempts into a `Decided`: its conclusion (verdict, cells, note), its finding
published, and its entry as every report shows it (report/data.py). It never raises for a series: what
could not be decided or recorded is the `error` of its Decided. The rest serves the pytest session end:
the order in which a session decides its series, the spend lines, cancelling, the launch plan lines.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from . import storage
from .findings.conclude import Conclusion, conclude
from .findings.files import FindingsRefused
from .findings.publish import write_finding_for
from .findings.spent import spent_for
from .project.loader import Project, RunnableExperiment, load_project, runnable
from .record import AttemptRecord
from .report import data, terminal
from .series.cap import CapError, SeriesCap, approved_cap_holds, approved_cap_text, series_cap
from .series.db import Store
from .series.ledger import LEASE_SECONDS, cancel, series_spend, status_text
from .series.lifecycle import SeriesRun
from .series.tally import SeriesTally


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
    try:
        attempts: SeriesTally | list[AttemptRecord]
        if tally is None or reread or went_down:
            records = _stored(project.root, series_id)
            if tally is None:
                tally = _tally_of(project.root, series_id, records)
            missing = len(tally.attempts() - {(r.variant, r.case, r.repeat) for r in records})
            attempts = records if reread else tally
        else:
            attempts = tally
            missing = tally.done - _committed(project.root, series_id)
        if missing > 0:
            return Decided(series_id, error=unrecorded(series_id, missing, went_down, reread))
        conclusion = conclude(project, series_id, attempts, family=family)
        if conclusion.verdict is not None and conclusion.unrecorded is None:
            try:
                conclusion.finding = write_finding_for(project, conclusion)
            except FindingsRefused as exc:   # the finding stays recorded in the database; nothing overwritten
                refused = str(exc)
            except OSError as exc:           # a full disk, an unwritable folder: the database has the finding
                refused = unwritten(project, conclusion, exc)
    except (OSError,) + storage.ERRORS as exc:   # the decision could not be recorded: nothing is lost
        return Decided(series_id, error=(
            f"pytest-aqven could not record the decision of series {series_id}: {type(exc).__name__}: {exc}. Free "
            f"space on the project's disk (or make .aqven/ writable), then run the same command: it decides the "
            f"series again from its recorded attempts, none runs again."))
    except Exception as exc:  # our bug: said as the series' error, the other series are still decided
        return Decided(series_id, error=f"pytest-aqven could not decide series {series_id}: {type(exc).__name__}: {exc}")
    entry = _entry(project, conclusion, tally, family, reports_root or project.root)
    return Decided(series_id, conclusion, entry, refused)


def _stored(root: Path, series_id: str) -> list[AttemptRecord]:
    store = Store(root)
    try:
        return [AttemptRecord.from_wire(wire) for wire in store.attempts(series_id)]
    finally:
        store.close()


def _committed(root: Path, series_id: str) -> int:
    """The series' finished attempts: its ledger rows (a finish writes its row and its record together), read
    from the one row of running totals (a count of the attempts would read every record's pages)."""
    store = Store(root)
    try:
        with store.read() as db:
            totals = db.spend_totals(series_id)
    finally:
        store.close()
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


def _tally_of(root: Path, series_id: str, records: list[AttemptRecord]) -> SeriesTally:
    """The tally of a series' stored records (a look's keeps them, for its table)."""
    kind = question_kind(str(root), series_id)
    series = _row(root, series_id)
    experiment = series.get("experiment_id", "")
    tally = SeriesTally(series_id, str(root), f"experiments/{experiment}/experiment.yaml", experiment,
                        series.get("split", ""), keep_records=kind in ("look", None))
    for record in records:
        tally.add(record)
    return tally


def _row(root: Path, series_id: str) -> dict:
    store = Store(root)
    try:
        return store.series(series_id) or {}
    finally:
        store.close()


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


def _entry(project: Project, conclusion: Conclusion, tally: SeriesTally, family: str, reports_root: Path) -> dict:
    row = _row(project.root, conclusion.series_id)
    found = project.experiments.get(conclusion.experiment)
    experiment = found if isinstance(found, RunnableExperiment) else None
    layout = {"question": experiment.spec.question.kind if experiment else None,
              "variants": row.get("variants", []), "cases": len(row.get("cases", [])), "repeats": row.get("repeats")}
    plan = None
    if experiment and conclusion.state in ("refuted", "inconclusive", "signal"):
        plan = data.plan_entry(quick_plan(project, experiment, conclusion.split, layout, family,
                                          observed=conclusion.series_id))
    # the series' own cap (the one its series line and a pause name), not the project's
    cap = row.get("cap_usd") or runnable(project).spec.research.spend_cap_usd
    return data.series_entry(conclusion, tally, layout, float(cap), plan,
                             Path(os.path.relpath(Path(tally.root), reports_root)).as_posix())


def quick_plan(project: Project, experiment: RunnableExperiment, split: str, layout: dict, family: str,
               observed: str | None = None):
    """The launch plan in closed form (instant), with this experiment's history (the series `observed`: a verdict's
    figure at the rates observed is its own series')."""
    run = SeriesRun(runnable(project), experiment, split, cases=layout["cases"] or None, repeats=layout["repeats"],
                    spent=spent_for(project, experiment, split))
    try:
        return run.launch_plan(family, simulate=False, observed=observed)
    finally:
        run.close_store()


# the pytest session end: which series, in which order, with which project

def projects_of(tallies: dict[str, SeriesTally], collected: dict[Path, Project]) -> dict[str, Project]:
    """Each series' project: the one collection loaded (an xdist controller collects nothing: loaded once
    here). The end snapshot hashes the input files as they are now, so a file changed during the run shows."""
    projects: dict[str, Project] = {}
    for tally in tallies.values():
        if tally.root not in projects:
            project = collected.get(Path(tally.root))
            projects[tally.root] = project if project is not None and project.spec is not None \
                else load_project(Path(tally.root))
    return projects


def session_order(tallies: dict[str, SeriesTally], selected: list[str] | None, standing: dict,
                  projects: dict[str, Project]) -> list[tuple[str | None, list[tuple[str, SeriesTally]] | None]]:
    """(verdict node id or None when deselected, its series or None when no attempt of it reported) in the
    order a session decides them: each selected verdict in file order whatever order the items ran in
    (pytest-randomly, --ff), then the series whose verdict was deselected (decided all the same: their data
    is final), an experiment a judge's validated_by names first (its finding decides the judge's verdicts)."""
    by_file: dict[str, list[tuple[str, SeriesTally]]] = {}
    for series_id, tally in sorted(tallies.items(), key=lambda kv: kv[1].file_nodeid):
        by_file.setdefault(tally.file_nodeid, []).append((series_id, tally))
    verdicts = sorted(selected) if selected is not None else [f"{f}::verdict" for f in by_file]
    # a held-out experiment whose cases are spent reported its standing finding as its verdict item ran
    verdicts = [v for v in verdicts if v.split("::")[0] not in standing]
    order: list = [(verdict_id, by_file.pop(verdict_id.split("::")[0], None)) for verdict_id in verdicts]
    order += [(None, series) for series in by_file.values()]
    calibrations = {(root, c.validated_by) for root, p in projects.items() for e in p.experiments.values()
                    if e.spec is not None for c in e.spec.checks if c.validated_by}
    order.sort(key=lambda entry: not any((tally.root, tally.experiment) in calibrations
                                         for _, tally in entry[1] or ()))
    return order


def look_of(project: Project, tally: SeriesTally) -> tuple | None:
    """What a look's table shows (experiment, split, records, check kinds), or None for another question."""
    experiment = project.experiments.get(tally.experiment)
    if experiment is None or experiment.spec is None or experiment.spec.question.kind != "look" \
            or tally.records is None:
        return None
    return experiment.id, tally.split, tally.records, {c.id: c.kind for c in experiment.spec.checks}


def spend_lines(tallies: dict[str, SeriesTally], discarded: dict[str, int], projects: dict[str, Project] | None = None,
                cap_option: str | None = None) -> list[str]:
    """Per series a run reported: what ran, what was reused, the spend against the cap, the approved cap that
    held over a lower one this command asked for (`cap_option`: its --aqven-cap), and the results discarded
    because another runner took their claims."""
    lines = []
    for series_id, tally in tallies.items():
        reused = tally.reused
        store = Store(Path(tally.root))
        try:
            series = store.series(series_id) or {}
            spent = series_spend(store, series_id)
        finally:
            store.close()
        lines.append(f"{tally.experiment} series {series_id}: {tally.done - reused} attempts ran, "
                     f"{reused} reused; spent {spent.text(series.get('cap_usd'))}; status {status_text(series)}")
        asked = _asked_cap((projects or {}).get(tally.root), tally.experiment, cap_option)
        if asked is not None and approved_cap_holds(series, asked):
            lines.append(f"  {approved_cap_text(series, asked)}")
        for old in series.get("closed") or []:
            lines.append(f"  closed series {old['series']}: its inputs changed since it started "
                         f"({', '.join(old['changed'])}), so it can never be continued; its verdict is invalid "
                         f"(inputs_changed)")
        if discarded.get(series_id):
            n = discarded[series_id]
            lines.append(f"  {n} result{'s' if n != 1 else ''} of this run discarded: another runner took "
                         f"{'their claims' if n != 1 else 'its claim'} while this one was suspended past the "
                         f"{LEASE_SECONDS:g} s lease; the other runner's results are the ones counted")
    return lines


def _asked_cap(project: Project | None, experiment_id: str, option: str | None) -> SeriesCap | None:
    """The cap this command gives the experiment's series, as collection computes it; None when it cannot."""
    found = project.experiments.get(experiment_id) if project is not None else None
    if project is None or not isinstance(found, RunnableExperiment):
        return None
    try:
        return series_cap(project.root, runnable(project).spec, option=option, experiment_cap=found.spec.cap_usd)
    except CapError:
        return None


def cancel_all(tallies: dict[str, SeriesTally], why: str) -> None:
    """The run stopped early: every series it touched and cut short is cancelled (its verdict invalid); one
    whose every attempt is recorded stays for the same command to decide."""
    for series_id, tally in tallies.items():
        store = Store(Path(tally.root))
        try:
            cancel(store, series_id, why, unless_complete=True)
        finally:
            store.close()


def plan_lines(rootpath: Path, file_nodeids: list[str], split: str, cases: int | None, repeats: int | None,
               family: str, *, cap_option: str | None = None, lines: bool = True):
    """Per experiment file (node ids relative to `rootpath`): (the file's node id, its series' spend cap, its
    launch plan line, or None without `lines`). An experiment that cannot be planned is left out: its
    collection reports its errors."""
    projects: dict[Path, Project] = {}
    for file_nodeid in file_nodeids:
        path = rootpath / file_nodeid
        root = path.parent.parent.parent
        try:
            project = projects.get(root) or projects.setdefault(root, load_project(root))
            experiment = project.runnable_experiment(path.parent.name)
            cap = series_cap(root, runnable(project).spec, option=cap_option, experiment_cap=experiment.spec.cap_usd)
            if not lines:
                yield file_nodeid, float(cap.cap_usd), None
                continue
            run = SeriesRun(runnable(project), experiment, split, cases=cases, repeats=repeats,
                            spent=spent_for(project, experiment, split))
            try:
                line = terminal.plan_line(path.parent.name, split, run.launch_plan(family, simulate=False))
            finally:
                run.close_store()       # Python 3.13 warns of a database left open
        except Exception:  # collection reports its errors; a plan line is not worth a crash
            continue
        yield file_nodeid, float(cap.cap_usd), line


def tally_for(record: AttemptRecord) -> SeriesTally:
    """A new series' tally; a look's keeps its records (the question kind is in the series' database row;
    unknown: kept too)."""
    root, file_nodeid = record.root, record.file_nodeid
    if root is None or file_nodeid is None:     # the session adds both where the attempt was reported
        raise ValueError(f"an attempt record of series {record.series_id} without its module root or experiment file")
    kind = question_kind(root, record.series_id)
    return SeriesTally(record.series_id, root, file_nodeid, record.experiment, record.split,
                       keep_records=kind in ("look", None))


def question_kind(root: str, series_id: str) -> str | None:
    try:
        with storage.peek(Path(root)) as db:
            return None if db is None else db.series_question(series_id)
    except storage.ERRORS:
        return None
