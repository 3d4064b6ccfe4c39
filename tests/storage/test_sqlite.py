"""The SQLite file itself: a database of the last release (0.1.0) opens unchanged, a new one is laid out
exactly as that release laid it out, and a newer schema is refused. (The contract is in test_contract.py.)

data/release-0.1.0.sqlite.gz was written by pytest-aqven 0.1.0 (before the storage package): the example
project run held-out and on dev with --aqven-cases 2 --aqven-repeats 1 (series, attempts, spend, claims
counter, a finding, FINDINGS.md's sha), then one rpm slot and one concurrency lease taken by its limiter."""
from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from pytest_aqven import storage
from pytest_aqven.series import ledger as ledgers
from pytest_aqven.series.db import Store
from pytest_aqven.storage import schema

RELEASE = Path(__file__).parent / "data" / "release-0.1.0.sqlite.gz"


def released(root: Path) -> Path:
    path = storage.database_path(root)
    path.parent.mkdir(parents=True)
    with gzip.open(RELEASE) as src, open(path, "wb") as out:
        shutil.copyfileobj(src, out)
    return path


def dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def layout(path: Path) -> set[tuple]:
    conn = sqlite3.connect(path)
    try:
        return set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))
    finally:
        conn.close()


def test_a_database_of_the_last_release_opens_unchanged_and_reads_as_before(tmp_path):
    path = released(tmp_path)
    before = dump(path)
    store = Store(tmp_path)
    try:
        with store.read() as db:
            ids = db.series_ids()
            assert len(ids) == 3 and db.findings() and db.findings_md_shas()
            assert all(db.count_finished(sid) for sid in ids)
        for sid in ids:
            assert store.series(sid)["status"] in ("done", "running")
            assert store.attempts(sid)
            spent = ledgers.series_spend(store, sid)
            assert spent.finished == len(store.attempts(sid))
    finally:
        store.close()
    assert dump(path) == before


def test_a_new_database_is_laid_out_exactly_as_the_last_release_laid_it_out(tmp_path):
    old = released(tmp_path / "old")
    store = Store(tmp_path / "new")
    try:
        with store.transaction() as db:
            db.ensure_findings()
    finally:
        store.close()
    storage.limits(tmp_path / "new").reserve("p", 1.0)
    assert layout(storage.database_path(tmp_path / "new")) == layout(old)


def test_a_database_of_a_newer_pytest_aqven_is_refused_and_left_as_it_is(tmp_path):
    path = released(tmp_path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE aqven_schema_versions SET version = ? WHERE component = 'series'", (schema.LATEST + 1,))
    conn.commit()
    conn.close()
    before = dump(path)
    with pytest.raises(storage.StorageError, match=rf"newer pytest-aqven \(schema version {schema.LATEST + 1}, "
                                                    rf"this one knows {schema.LATEST}\): upgrade pytest-aqven"):
        Store(tmp_path)
    assert dump(path) == before


@pytest.mark.slow
def test_a_newer_database_is_one_message_in_pytest_and_in_every_aqven_command(tmp_path, xdist):
    """pytest: once, at the session start, exit 4, no call; each aqven command that reads the store: the same
    message, never a traceback; `aqven db check` says it is newer and exits 1. The file is left as it is."""
    from .. import faults
    root = faults.make(tmp_path, cases=8, experiments=("rate_a", "rate_b"))
    first = faults.run(tmp_path, "--aqven-holdout")
    assert first.returncode == 0, first.stdout
    path = storage.database_path(root)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE aqven_schema_versions SET version = ? WHERE component = 'series'", (schema.LATEST + 1,))
    conn.close()
    before = dump(path)
    message = f"was written by a newer pytest-aqven (schema version {schema.LATEST + 1}, this one knows {schema.LATEST})"
    run = faults.run(tmp_path, "--aqven-holdout", *xdist)
    out = run.stdout + run.stderr
    assert run.returncode == 4 and out.count(message) == 1 and "Traceback" not in out, out
    for command in (["series", "list"], ["series", "show", "x"], ["findings", "rebuild"], ["plan"],
                    ["db", "migrate"]):
        done = faults.aqven(tmp_path, *command, "--project", "proj")
        said = done.stdout + done.stderr
        assert done.returncode in (1, 2) and message in said and "Traceback" not in said, (command, said)
    check = faults.aqven(tmp_path, "db", "check", "--project", "proj")
    assert check.returncode == 1 and f"schema version {schema.LATEST + 1} is newer" in check.stdout, check.stdout
    assert dump(path) == before


@pytest.mark.slow
def test_an_open_series_an_older_release_recorded_is_continued_not_closed_as_inputs_changed(tmp_path):
    """A release of 2026-11-30 hashed fewer kinds of input (no judges, experiment folder, modules) and so keyed
    its plan otherwise: its open series is continued under this release's key, its attempts reused, nothing
    closed as inputs_changed and nothing paid twice."""
    import json

    from .. import faults
    root = faults.make(tmp_path, cases=24, gate=4)
    planned = faults.attempts_planned(root, "dev")
    faults.kill_mid_series(tmp_path, root, 4)
    (series_id, record), = faults.query(root, "SELECT series_id, record FROM aqven_series")
    old = json.loads(record)
    for kind in ("judges_sha256", "experiment_folder_sha256", "modules_sha256", "modules"):
        del old["snapshot"][kind]
    for key in ("scope_key", "runs"):
        old.pop(key, None)
    with sqlite3.connect(storage.database_path(root)) as conn:     # as that release wrote it
        conn.execute("UPDATE aqven_series SET plan_key = 'older', record = ? WHERE series_id = ?",
                     (json.dumps(old), series_id))
    conn.close()
    kept, paid = faults.finished(root), len(faults.calls(root))
    again = faults.run(tmp_path)
    assert again.returncode == 0, again.stdout
    assert "inputs changed" not in again.stdout and f"{planned - kept} attempts ran, {kept} reused" in again.stdout
    assert [(s["series_id"], s["status"]) for s in faults.series(root)] == [(series_id, "done")]
    assert len(faults.calls(root)) - paid <= planned - kept + 4         # only what was missing (and in flight)


def test_db_check_of_a_newer_file_says_so_given_the_file_or_its_project_folder(tmp_path):
    """`aqven db check proj` reads proj's database, as `aqven check proj` reads proj: never 'damaged'."""
    from .. import faults
    root = faults.make(tmp_path, cases=2)
    assert faults.aqven(tmp_path, "db", "migrate", "--path", "proj").returncode == 0
    with sqlite3.connect(storage.database_path(root)) as conn:
        conn.execute("UPDATE aqven_schema_versions SET version = ?", (schema.LATEST + 1,))
    conn.close()
    for target in ("proj", "proj/.aqven/aqven.sqlite"):
        newer = faults.aqven(tmp_path, "db", "check", target)
        assert newer.returncode == 1, newer.stdout + newer.stderr
        assert f"schema version {schema.LATEST + 1} is newer than this pytest-aqven's ({schema.LATEST}): upgrade " \
               f"it" in newer.stdout and "damaged" not in newer.stdout
