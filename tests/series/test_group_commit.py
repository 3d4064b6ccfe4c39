"""Attempt finishes are group-committed: they join the next claim's transaction, or a timer's within 100 ms,
or the end of a run loop; a killed process loses at most its last batch, whose attempts are rerun and never
counted twice."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time

from pytest_aqven.series import db as series_db, open_stores
from pytest_aqven.series.db import Store
from pytest_aqven.series.ledger import Ledger

from .. import faults


def finish(ledger, record: dict) -> None:
    """The attempt's finish, under the claim its runner holds (as the scheduler finishes it)."""
    ledger.finish_later(record, faults.held(ledger, record))


def record(series_id: str, case: str) -> dict:
    return {"series_id": series_id, "variant": "v", "case": case, "repeat": 1, "outcome": "ok", "cost_usd": 0.01,
            "check_cost_usd": 0.0, "started_at": 1.0, "finished_at": 2.0, "passed": True}


def committed(root, series_id: str) -> list[str]:
    """What another process sees: only committed rows."""
    conn = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    try:
        return sorted(r[0] for r in conn.execute(
            "SELECT case_name FROM aqven_series_attempts WHERE series_id = ? AND state = 'finished'", (series_id,)))
    finally:
        conn.close()


def open_series(store: Store) -> str:
    return store.open_series(plan_key="k", experiment_id="e", flow_id="f", dataset_id="d", split="dev",
                             question="threshold", record={"cases": [], "repeats": 1, "variants": ["v"]})[0]


def run(ledger: Ledger, sid: str, case: str) -> None:
    """An attempt at concurrency 1: its claim, then its finish by group commit."""
    assert ledger.batch([("start", sid, "v", case, 1)])[0].kind == "start"
    finish(ledger, record(sid, case))


def test_a_finish_commits_with_the_next_claim_or_within_the_interval_and_readers_see_it(tmp_path, monkeypatch):
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 0.05)
    ledger = Ledger(Store(tmp_path))
    sid = open_series(ledger.store)
    run(ledger, sid, "a")
    assert committed(tmp_path, sid) == []               # its batch, not yet committed
    deadline = time.monotonic() + 10
    while committed(tmp_path, sid) != ["a"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert committed(tmp_path, sid) == ["a"]            # the timer committed it
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 60.0)
    run(ledger, sid, "b")
    run(ledger, sid, "c")                               # c's claim commits b's finish
    assert committed(tmp_path, sid) == ["a", "b"]
    reader = Store(tmp_path)                            # another store of this process (the series run's)
    assert [r["case"] for r in reader.attempts(sid)] == ["a", "b", "c"]     # readers flush every store first
    run(ledger, sid, "d")
    open_stores.flush_all()                             # what the plugin does when its run loop ends
    assert committed(tmp_path, sid) == ["a", "b", "c", "d"]
    spend = ledger.store.db.raw.execute("SELECT finished, spent_usd FROM aqven_spend_totals").fetchone()
    assert spend[0] == 4 and abs(spend[1] - 0.04) < 1e-9     # each finish counted once
    reader.close()
    ledger.store.close()


def test_a_store_tells_open_stores_it_is_open_until_it_closes(tmp_path, monkeypatch):
    """The plugin flushes the stores registered here when its run loop ends; a run that opened none skips it."""
    monkeypatch.setattr(open_stores, "_OPEN", type(open_stores._OPEN)())
    assert not open_stores.any_open()
    store = Store(tmp_path)
    assert open_stores.any_open()
    store.close()
    assert not open_stores.any_open()


def test_a_finish_waiting_for_its_batch_keeps_its_claim_running_so_its_reserve_counts(tmp_path, monkeypatch):
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 60.0)
    ledger = Ledger(Store(tmp_path))
    sid = open_series(ledger.store)
    run(ledger, sid, "a")
    other = sqlite3.connect(tmp_path / ".aqven" / "aqven.sqlite")
    assert other.execute("SELECT state FROM aqven_claims").fetchall() == [("running",)]
    ledger.store.flush()
    assert other.execute("SELECT state FROM aqven_claims").fetchall() == [("finished",)]
    other.close()
    ledger.store.close()


def test_the_group_commit_clock_is_one_thread_per_store_and_stops_with_it(tmp_path, monkeypatch):
    """Each batch arms the store's flusher; no thread is started per batch (a timer thread each time made the
    caller, the attempts' loop included, wait for the new thread to take the GIL)."""
    import threading

    started: list[threading.Thread] = []
    start = threading.Thread.start

    def recording_start(thread):
        started.append(thread)
        return start(thread)
    monkeypatch.setattr(threading.Thread, "start", recording_start)
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 0.02)
    ledger = Ledger(Store(tmp_path))
    sid = open_series(ledger.store)
    for case in "abcde":
        run(ledger, sid, case)
        deadline = time.monotonic() + 10
        while case not in committed(tmp_path, sid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert case in committed(tmp_path, sid)     # each batch committed by the flusher, within the interval
    assert [t.name for t in started] == ["aqven-commit"]      # five batches, one thread
    ledger.store.close()
    started[0].join(timeout=5)
    assert not started[0].is_alive()


KILLED = """
    import os, signal, sys, time
    from pathlib import Path
    from pytest_aqven.series.db import Store
    from pytest_aqven.series.ledger import Ledger
    from tests.series.test_group_commit import open_series, run

    ledger = Ledger(Store(Path(sys.argv[1])))
    sid = open_series(ledger.store)
    print(sid, flush=True)
    for case in ("a", "b", "c"):
        run(ledger, sid, case)
    time.sleep(1.0)                     # the timer commits that batch
    run(ledger, sid, "d")
    os.kill(os.getpid(), signal.SIGKILL)  # d's batch is lost
"""


def test_kill_9_loses_at_most_the_last_batch_and_a_rerun_counts_nothing_twice(tmp_path):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), str(tmp_path)], capture_output=True,
                         text=True, cwd=series_db.Path(__file__).parents[2])
    assert out.returncode == -9, out.stderr
    sid = out.stdout.strip()
    assert committed(tmp_path, sid) == ["a", "b", "c"]
    ledger = Ledger(Store(tmp_path))     # the rerun: its dead runner's claim on d is taken over, the rest reused
    assert [ledger.try_start(sid, "v", c, 1).kind for c in "abcd"] == ["reused", "reused", "reused", "start"]
    finish(ledger, record(sid, "d"))
    ledger.store.close()
    assert committed(tmp_path, sid) == ["a", "b", "c", "d"]
    conn = sqlite3.connect(tmp_path / ".aqven" / "aqven.sqlite")
    assert conn.execute("SELECT finished FROM aqven_spend_totals").fetchone()[0] == 4
    conn.close()
