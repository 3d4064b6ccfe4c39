"""What only the pytest session end needs of deciding: which series it decides, in which order, with which
project; the tally of a series as its first attempt record arrives; the spend lines of the summary; cancelling
the series of a run stopped early; the launch plan lines. Deciding one series is api/decide.py's, which
`aqven series decide` calls too."""
from __future__ import annotations

from pathlib import Path

from ..api.decide import question_kind
from ..findings.spent import spent_for
from ..project.loader import Project, RunnableExperiment, load_project, runnable
from ..record import AttemptRecord
from ..report import terminal
from ..series.cap import CapError, SeriesCap, approved_cap_holds, approved_cap_text, series_cap
from ..series.db import Store
from ..series.ledger import LEASE_SECONDS, cancel, series_spend, status_text
from ..series.lifecycle import SeriesRun
from ..series.tally import SeriesTally


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
