"""Deciding one series is one unit of work on one connection to the project database, on both backends."""
from __future__ import annotations

import sqlite3

import psycopg
import pytest

from pytest_aqven import storage
from pytest_aqven.api.decide import decide
from pytest_aqven.project.loader import load_project

from .. import faults


def _sql(root, url: str, sql: str) -> list[tuple]:
    """One statement, committed, on the project's database: PostgreSQL at `url`, else its SQLite file."""
    if url:
        with psycopg.connect(url, autocommit=True) as pg:
            cursor = pg.execute(sql)
            return cursor.fetchall() if cursor.description else []
    conn = sqlite3.connect(faults.database(root))
    try:
        with conn:
            return conn.execute(sql).fetchall()
    finally:
        conn.close()


# a held-out series confirmed (its finding recorded and written); a working one with a signal (its entry reads the
# series back for its launch plan)
DECIDED = {"confirmed": ('{"label": "positive"}', ("--aqven-holdout",)), "signal": ('{"label": "negative"}', ())}


@pytest.mark.parametrize("state", sorted(DECIDED))
@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.slow
def test_deciding_a_series_opens_one_connection(tmp_path, request, monkeypatch, store, state):
    """The tally, the verdict, the series' end with its finding, the finding's files and the report's entry: one
    store, one connection (each step opened its own before: 6 to 8)."""
    url = request.getfixturevalue("postgres_url") if store == "postgresql" else ""
    answer, args = DECIDED[state]
    faults.make(tmp_path, cases=8, answer=answer)
    run = faults.run(tmp_path, *args, env={"AQVEN_STORE": url})
    assert run.returncode == 0, run.stdout + run.stderr
    root = tmp_path / "proj"
    if url:
        storage.choose(url)
        request.addfinalizer(lambda: storage.choose(None))
    ((series_id,),) = _sql(root, url, "SELECT series_id FROM aqven_series")
    # as a session that stopped before deciding it leaves it: every attempt recorded, the series still running
    _sql(root, url, "UPDATE aqven_series SET status = 'running'")
    project = load_project(root)
    opened: list[str] = []
    module, connect = (psycopg, psycopg.connect) if url else (sqlite3, sqlite3.connect)

    def counted(*args, **kwargs):
        opened.append(str(args[0]) if args else "")
        return connect(*args, **kwargs)

    monkeypatch.setattr(module, "connect", counted)
    decided = decide(project, series_id)
    monkeypatch.undo()
    assert decided.error is None and decided.state == state, decided
    assert decided.conclusion is not None and (decided.conclusion.finding is not None) == (state == "confirmed")
    assert len(opened) == 1, opened
