"""A runner stopped inside its transaction (Ctrl-Z, a paused CI job, a sleeping laptop) stalls no other for
long: on SQLite the others wait disk.LOCK_WAIT_S for the writer's turn, then stop with one line naming the
holder (its pid, stopped); on PostgreSQL the server ends the stopped session after half that
(idle_in_transaction_session_timeout), so the others go on, and lock_timeout bounds every other wait.
"""
from __future__ import annotations

import os
import signal
import socket

import pytest

from pytest_aqven.storage import disk, sqlite

from .. import faults

# the test project's conftest: a 3 s lock wait and lease; with FAULT_HOLD_TX=1 the process, in its first
# transaction after 3 paid calls (mid-series), writes the file `in-tx` and holds the transaction until the
# file `resume` exists: the test stops it there (SIGSTOP), as Ctrl-Z or a paused CI job does
HOLD_TX = '''
import contextlib, os, pathlib, time
from pytest_aqven.series import db, ledger
from pytest_aqven.storage import disk
disk.LOCK_WAIT_S = 3.0
ledger.LEASE_SECONDS = 3.0
HERE = pathlib.Path(__file__).parent
_transaction, _held = db.Store.transaction, []


@contextlib.contextmanager
def _holding(self):
    with _transaction(self) as tx:
        if os.environ.get("FAULT_HOLD_TX") and not _held and (HERE / "calls.log").exists() \\
                and len((HERE / "calls.log").read_text().splitlines()) >= 3:
            _held.append(1)
            (HERE / "in-tx").touch()
            deadline = time.monotonic() + 60
            while not (HERE / "resume").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        yield tx
db.Store.transaction = _holding
'''


def stopped_in_a_transaction(tmp_path, env: dict):
    """The first runner, stopped (SIGSTOP) inside a transaction mid-series: (root, its process)."""
    root = faults.make(tmp_path, cases=48, files={"conftest.py": HOLD_TX})
    first = faults.start(tmp_path, env={**env, "FAULT_HOLD_TX": "1"})
    faults.wait_until(lambda: (root / "in-tx").exists(), first, what="the first runner inside its transaction")
    first.send_signal(signal.SIGSTOP)
    faults.wait_until(lambda: _state(first.pid) == "T", first, what="the first runner stopped")
    return root, first


def resume(root, first) -> None:
    (root / "resume").touch()
    first.send_signal(signal.SIGCONT)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0]
    except OSError:
        return ""


def _holds_the_write_lock(pid: int) -> bool:
    """The process holds SQLite's WAL write lock: byte 120 of the -shm file, exclusively (/proc/locks)."""
    with open("/proc/locks") as f:
        return any(f" {pid} " in line and " WRITE " in line and line.split()[-2:] == ["120", "120"] for line in f)


@pytest.mark.slow
def test_sqlite_a_runner_stopped_in_its_transaction_is_named_and_the_other_stops_with_one_line(tmp_path, xdist):
    root, first = stopped_in_a_transaction(tmp_path, {})
    try:
        assert _holds_the_write_lock(first.pid), "SQLite's write lock is gone from the stopped runner (docstring)"
        second = faults.run(tmp_path, *xdist, timeout=120)
    finally:
        resume(root, first)
    out = second.stdout + second.stderr
    assert second.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert out.count(f"was held by another writer for more than 3 s: pid {first.pid} on this machine, stopped "
                     f"(Ctrl-Z or SIGSTOP: `kill -CONT {first.pid}` resumes it). This run stops here; what was "
                     f"committed is kept. Resume or end that runner, then run the same command") == 1, out
    assert "Traceback" not in out and "database is locked" not in out and "INTERNALERROR" not in out
    first_out = first.communicate(timeout=300)[0]
    assert first.returncode == 0, first_out         # resumed, it finishes the series: nothing was taken from it
    paid = faults.calls(root)
    assert [s["status"] for s in faults.series(root)] == ["done"]
    assert len(paid) == len(set(paid)) == faults.attempts_planned(root, "dev")


@pytest.mark.slow
def test_postgresql_a_runner_stopped_in_its_transaction_loses_its_session_and_the_other_goes_on(
        tmp_path, postgres_url, xdist):
    env = {"AQVEN_STORE": postgres_url}
    root, first = stopped_in_a_transaction(tmp_path, env)
    try:
        second = faults.run(tmp_path, *xdist, env=env, timeout=300)
    finally:
        resume(root, first)
    first_out = first.communicate(timeout=300)[0]
    assert second.returncode == 0, second.stdout
    assert "Traceback" not in second.stdout + first_out and "INTERNALERROR" not in first_out, first_out
    assert first.returncode == 0, first_out
    paid = faults.calls(root)
    assert len(set(paid)) == faults.attempts_planned(root, "dev")


def test_the_holder_is_named_from_the_file_beside_the_database(tmp_path):
    path = tmp_path / "aqven.sqlite"
    writer = sqlite.Writer(path)
    assert "did not say which" in writer.holder()
    writer.took()
    assert sqlite.Writer(path).holder() == disk.holder(os.getpid(), socket.gethostname())
    writer.close()
    assert disk.holder(1, "elsewhere") == "pid 1 on elsewhere"


def test_postgresql_a_lock_wait_past_lock_timeout_names_the_session_holding_it(postgres_url, tmp_path, monkeypatch):
    """A session that is not idle keeps the writer's lock (another tool, or a runner's long statement): the wait
    ends at lock_timeout with the one message, naming that session."""
    import psycopg

    from pytest_aqven import storage
    from pytest_aqven.storage import postgres

    monkeypatch.setattr(disk, "LOCK_WAIT_S", 1.0)
    storage.choose(postgres_url)
    try:
        database = storage.open_database(tmp_path)
        with psycopg.connect(postgres_url, application_name="psql") as other:
            other.execute("SELECT pg_advisory_xact_lock(%s)", (postgres.WRITER_LOCK,))
            backend = other.info.backend_pid
            with pytest.raises(storage.StoreAway) as stalled:
                with database.transaction():
                    pass
        assert str(stalled.value) == (
            f"pytest-aqven: the project database {database.location} was held by another writer for more than 1 s: "
            f"server backend {backend} (psql, from a local socket). This run stops here; what was committed is "
            f"kept. Resume or end that runner, then run the same command: it continues the series.")
        with database.transaction() as db:      # the lock let go: the same connection goes on
            db.add_runner("r", "h", 1, 1.0)
        database.close()
    finally:
        storage.choose(None)
