"""The finding of a concluded held-out series: recorded once in the database, then published as files.

One DB transaction marks the series done and records the finding's text (`settle`, `record`); the two files
follow from that row (`publish`): the finding file, written once, then FINDINGS.md regenerated. A
crash anywhere in between leaves a row the next run publishes (`repair`, at collection; the rerun of
the same command continues that series with its attempts reused), or `aqven check` reports; the
held-out half is never run again for it.
"""
from __future__ import annotations

from pathlib import Path

from .. import storage
from ..project.model import Project
from ..series.db import Store, known_series
from ..series.tally import SeriesTally
from . import document
from .conclude import Conclusion, stopped_meanwhile
from .files import (
    FindingsRefused,
    examine,
    finding_path,
    finding_text,
    overwrite_finding_file,
    read_findings,
    refresh_findings_md,
    render_findings_md,
    text_sha,
    write_finding_file,
)


def due(conclusion: Conclusion) -> bool:
    """Held-out series write a finding unless the verdict is invalid (a look has none)."""
    return (conclusion.verdict is not None and conclusion.state not in (None, "invalid")
            and conclusion.split == "holdout")


def settle(store: Store, project: Project, conclusion: Conclusion, tally: SeriesTally, family: str) -> None:
    """Record the end of a decided series (`conclude`) and its finding when it has one; a cancel that landed
    while it was being decided wins (cancel is final), and its verdict says so."""
    _, verdict, facts, _ = conclusion.decided()
    status = "failed" if tally.infra_errors == tally.done else "done"
    series = store.known_series(conclusion.series_id)
    try:
        held = record(store, project, series, conclusion, tally, status, {
            "verdict": {"state": verdict.state, "reason": verdict.reason, "text": verdict.text}, "family": family,
            # stopped early: the held-out cases no attempt reached stay unspent (findings/spent.py)
            **({"spent_cases": sorted(tally.case_names())} if facts.planned_cases else {})})
    except storage.disk.DiskFull as exc:     # shown now; the series stays running, the same command records it
        conclusion.unrecorded = str(exc)
        return
    if held == "cancelled":
        stopped_meanwhile(conclusion, store.known_series(conclusion.series_id))


@storage.rerun
def record(store: Store, project: Project, series: dict, conclusion: Conclusion, tally: SeriesTally,
           status: str, updates: dict) -> str:
    """Mark the series finished and, when it has one, record its finding: one transaction, which reads the
    series' status first. Cancel is final: a series cancelled meanwhile (`aqven series cancel` landing at the
    decision) gets no finding and stays cancelled. A series another runner already decided keeps its verdict
    and finding (written exactly once). Returns the status the series holds after the transaction."""
    text = finding_text(document.build(project, series, conclusion, tally), decided=True) if due(conclusion) else None
    with store.transaction() as db:
        db.ensure_findings()
        held, stored, _, _ = known_series(db, conclusion.series_id)
        if held in ("cancelled", "done", "failed"):
            return held
        if text is not None and db.finding(conclusion.series_id) is None:
            db.insert_finding(conclusion.series_id, conclusion.experiment, text, db.now())
        merged = {**stored, **updates}
        if text is not None:
            merged["finding_path"] = finding_path(project.root, conclusion.experiment,
                                                  conclusion.series_id).relative_to(project.root).as_posix()
        db.finish_series(conclusion.series_id, status, merged, db.now())
    return status


def _publish_rows(project: Project, store: Store, rows: list[tuple[str, str, str]], *, mark: bool,
                  force_md: bool = False) -> list[Path]:
    """Write the finding files of `rows` (series, experiment, text), then FINDINGS.md; remember the text
    written; mark the rows published when asked."""
    root = project.root
    # FINDINGS.md is generated from the finding files alone: a text that is what the files standing now give
    # was made by aqven, whoever made it (a fresh clone, a database set aside), and may be regenerated
    before = text_sha(render_findings_md(root, read_findings(root, project.package)))
    paths = [write_finding_file(root, experiment, series_id, text) for series_id, experiment, text in rows]
    with store.transaction() as db:
        db.ensure_findings()
        generated = db.findings_md_shas() | {before}
    sha = refresh_findings_md(root, project.package, generated, force=force_md)
    with store.transaction() as db:
        db.add_findings_md(sha, db.now())
        if mark:
            db.mark_published([series_id for series_id, _, _ in rows], db.now())
    return paths


def write_finding_for(project: Project, store: Store, conclusion: Conclusion) -> Path | None:
    """Publish the finding `settle` recorded for this series (raises FindingsRefused when the files on
    disk are not what aqven generated: the finding stays in the database, nothing is overwritten)."""
    if not due(conclusion):
        return None
    with store.transaction() as db:
        db.ensure_findings()
        text = db.finding(conclusion.series_id)
    if text is None:
        return None
    return _publish_rows(project, store, [(conclusion.series_id, conclusion.experiment, text)], mark=True)[0]


def recorded(root: Path) -> list[tuple[str, str, str]]:
    """(series, experiment, text) of every finding the project database recorded; [] without a database."""
    try:
        with storage.peek(root) as db:
            return [] if db is None else db.findings()
    except storage.ERRORS:      # a database from before findings were recorded in it
        return []


def repair(project: Project) -> None:
    """Publish what a crash left recorded but unwritten: missing finding files, a FINDINGS.md that lags.
    Never overwrites a file that differs (aqven check reports it); leaves rows unpublished, so that the
    rerun of the command still reports the verdict of that series."""
    rows = recorded(project.root)
    missing = [r for r in rows if not finding_path(project.root, r[1], r[0]).exists()]
    if not rows:
        return
    store = Store(project.root)
    try:
        _publish_rows(project, store, missing, mark=False)
    except FindingsRefused:
        pass   # an edited file or a hand-made line: aqven check and collection report it
    finally:
        store.close()


def edited(project: Project) -> tuple[list[tuple[Path, str, str]], list[tuple[Path, str]]]:
    """Finding files that are not what aqven wrote: (file, what is wrong, the text the project database
    recorded) for those it can restore, and (file, what is wrong) for those the database has no text of
    (a fresh clone, a file moved to another experiment's folder)."""
    texts = {(experiment, series): text for series, experiment, text in recorded(project.root)}
    restorable, lost = [], []
    for path, _, found in examine(project.root, project.package):
        text = texts.get((path.parent.parent.name, path.stem))
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if text is not None and current != text:
            restorable.append((path, found[0][1] if found else "its text is not the finding the database recorded", text))
        elif found:
            lost.append((path, found[0][1]))
    return restorable, lost


def restore(project: Project, restorable: list[tuple[Path, str, str]]) -> list[Path]:
    """Overwrite edited finding files with the text the project database recorded (a person confirmed it)."""
    for path, _, text in restorable:
        overwrite_finding_file(project.root, path, text)
    return [path for path, _, _ in restorable]


def rebuild(project: Project) -> tuple[list[Path], str]:
    """`aqven findings rebuild`: every finding the database recorded written back when missing, then
    FINDINGS.md regenerated from the findings that stand, over hand-made lines. Returns (restored
    files, sha of FINDINGS.md). Raises FindingsRefused when a finding file does not stand."""
    rows = recorded(project.root)
    missing = [r for r in rows if not finding_path(project.root, r[1], r[0]).exists()]
    store = Store(project.root)
    try:
        paths = _publish_rows(project, store, missing, mark=True, force_md=True)
    finally:
        store.close()
    return paths, ""
