"""Attempt records are group-committed: one transaction per batch, at least every 100 ms and at the end of
a run loop; a killed process loses at most its last batch, whose attempts are rerun and never counted twice."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time

from pytest_aqven.series import db as series_db
from pytest_aqven.series.db import Store


def record(series_id: str, case: str) -> dict:
    return {"series_id": series_id, "variant": "v", "case": case, "repeat": 1, "outcome": "ok", "cost_usd": 0.0,
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


def test_a_batch_commits_within_the_interval_and_at_flush(tmp_path, monkeypatch):
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 0.05)
    store = Store(tmp_path)
    sid = open_series(store)
    for case in ("a", "b", "c"):
        store.save_attempt(record(sid, case))
    assert committed(tmp_path, sid) == []              # one batch, not yet committed
    deadline = time.monotonic() + 10
    while committed(tmp_path, sid) != ["a", "b", "c"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert committed(tmp_path, sid) == ["a", "b", "c"]  # the timer committed it
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 60.0)
    store.save_attempt(record(sid, "d"))
    assert [r["case"] for r in store.attempts(sid)] == ["a", "b", "c", "d"]   # readers flush first
    store.save_attempt(record(sid, "e"))
    series_db.flush_all()                               # what the plugin does when its run loop ends
    assert committed(tmp_path, sid) == ["a", "b", "c", "d", "e"]
    store.close()


KILLED = """
    import os, signal, sys, time
    from pathlib import Path
    from pytest_aqven.series.db import Store
    from tests.test_group_commit import open_series, record

    store = Store(Path(sys.argv[1]))
    sid = open_series(store)
    print(sid, flush=True)
    for case in ("a", "b", "c"):
        store.save_attempt(record(sid, case))
    time.sleep(1.0)                     # the timer commits that batch
    store.save_attempt(record(sid, "d"))
    os.kill(os.getpid(), signal.SIGKILL)  # d's batch is lost
"""


def test_kill_9_loses_at_most_the_last_batch_and_a_rerun_counts_nothing_twice(tmp_path):
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED), str(tmp_path)], capture_output=True,
                         text=True, cwd=series_db.Path(__file__).parent.parent)
    assert out.returncode == -9, out.stderr
    sid = out.stdout.strip()
    assert committed(tmp_path, sid) == ["a", "b", "c"]
    store = Store(tmp_path)              # the rerun: runs what has no finished row, saves everything it has
    missing = [c for c in "abcd" if store.finished_attempt(sid, "v", c, 1) is None]
    assert missing == ["d"]
    for case in "abcd":
        store.save_attempt(record(sid, case))
    store.close()
    assert committed(tmp_path, sid) == ["a", "b", "c", "d"]
