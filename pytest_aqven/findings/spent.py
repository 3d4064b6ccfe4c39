"""Which held-out cases of an experiment are spent (series/spent.py says what that means): those named by its
finding files, and by the findings the project database recorded, whose files may not be written yet."""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Callable

from .. import storage
from ..project.model import Project, RunnableExperiment
from ..series.db import spent_cases
from ..series.spent import Spent
from ..storage import Transaction
from .files import finding_files, parse

Read = Callable[[], AbstractContextManager["Transaction | None"]]     # what storage.peek and Store.read give


def spent(project: Project, experiment: RunnableExperiment, read: Read | None = None) -> Spent:
    """`read`: the database's committed state, on a connection the caller has open (default: a read-only look)."""
    out = Spent(reread=lambda: spent(project, experiment))
    root = project.root
    read = read or (lambda: storage.peek(root))
    seen: set[str] = set()
    for path in finding_files(root):
        if path.parent.parent.name != experiment.id:
            continue
        try:
            document, _ = parse(path.read_text(encoding="utf-8"), path.name)
        except (OSError, UnicodeDecodeError):
            continue
        if isinstance(document, dict):          # any finding file that reads, standing or not: its cases ran
            out.keys |= _keys(document)
            seen.add(str(document.get("series")))
            out.findings.append(_summary(document, path.relative_to(root).as_posix()))
    for series_id, record, text in _recorded(read, experiment.id):
        out.names |= spent_cases(record)
        if series_id not in seen:               # recorded, its file not written (yet)
            document, _ = parse(text, "finding")
            if isinstance(document, dict):
                out.findings.append(_summary(document, record.get("finding_path")))
    out.open_series = _open_held_out(read, experiment.id)
    return out


def _dict(value: object) -> dict:
    """The value when a finding file holds a mapping there, else an empty one."""
    return value if isinstance(value, dict) else {}


def _keys(document: dict) -> set[str]:
    scope = _dict(document.get("scope"))
    keys = {k for k in scope.get("case_keys") or [] if isinstance(k, str)}
    data = _dict(document.get("data"))
    variants = _dict(data.get("variants"))
    for metrics in variants.values():
        for per_case in (metrics.values() if isinstance(metrics, dict) else []):
            if isinstance(per_case, dict):
                keys |= {k for k in per_case if isinstance(k, str)}
    return keys


def _summary(document: dict, path: str | None) -> dict:
    scope = _dict(document.get("scope"))
    return {"series": str(document.get("series")), "state": document.get("state"),
            "statement": document.get("statement"), "path": path, "finished_at": scope.get("finished_at"),
            "cases": scope.get("cases"), "keys": _keys(document)}


def _recorded(read: Read, experiment_id: str) -> list[tuple[str, dict, str]]:
    """(series id, series record, finding text) of every held-out series of the experiment with a finding."""
    try:
        with read() as db:
            return [] if db is None else db.held_out_findings(experiment_id)
    except storage.ERRORS:      # a database from before findings were recorded in it
        return []


def _open_held_out(read: Read, experiment_id: str) -> bool:
    try:
        with read() as db:
            return db is not None and db.has_open_held_out(experiment_id)
    except storage.ERRORS:
        return False


def spent_for(project: Project, experiment: RunnableExperiment, split: str, read: Read | None = None
              ) -> Spent | None:
    """What a SeriesRun of this split takes as `spent`: the spent cases of the held-out half, None for the dev half."""
    return spent(project, experiment, read) if split == "holdout" else None
