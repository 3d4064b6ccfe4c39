"""A PostgreSQL server that goes away mid-series, on a real server: a transaction the cut interrupts runs again
as a whole once the connection is open again (storage.rerun), a cut during COMMIT asks the server whether it
committed, and a pytest run whose backends are terminated mid-transaction finishes every attempt (none `F`).
A server away longer than the wait (AWAY_S, shortened by the test project's conftest) ends the run with one
message and exit code 4; the same command then continues the series."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from pytest_aqven import storage
from pytest_aqven.storage import postgres

from .. import faults
from . import server as pg
from .test_runners import copies, rows

OURS = "application_name LIKE 'aqven %' AND datname = current_database() AND pid != pg_backend_pid()"


@pytest.fixture
def database(postgres_url, tmp_path):
    storage.choose(postgres_url)
    db = storage.open_database(tmp_path)     # a server store: the root is not where it is
    yield db
    db.close()
    storage.choose(None)


def terminate(url: str, where: str = OURS) -> int:
    """The backends of pytest-aqven's connections cut, as a restart or a network cut does; how many."""
    with psycopg.connect(url, autocommit=True) as conn:
        return len(conn.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE {where}").fetchall())


def test_a_transaction_cut_midway_runs_again_as_a_whole_and_commits_once(database, postgres_url):
    runs = []

    @storage.rerun
    def add_runner() -> None:
        with database.transaction() as db:
            runs.append(1)
            db.add_runner("r1", "host", 1, 1.0)
            if len(runs) == 1:          # the connection is cut between two statements of the transaction
                assert terminate(postgres_url) == 1
            db.beat("r1", 2.0)

    add_runner()
    assert len(runs) == 2
    assert rows(postgres_url, "SELECT runner_id, heartbeat_at FROM aqven_runners") == [("r1", 2.0)]


def test_a_cut_interrupts_the_transaction_with_nothing_of_it_kept(database, postgres_url):
    with pytest.raises(storage.Interrupted, match="was cut"):
        with database.transaction() as db:
            db.add_runner("r1", "host", 1, 1.0)
            terminate(postgres_url)
            db.beat("r1", 2.0)
    assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_runners") == [(0,)]
    with database.transaction() as db:      # the next transaction opens the connection again
        db.add_runner("r2", "host", 1, 1.0)
    assert rows(postgres_url, "SELECT runner_id FROM aqven_runners") == [("r2",)]


def test_after_a_cut_during_commit_the_server_says_whether_it_committed(database, postgres_url):
    """The COMMIT that a cut hides: pg_xact_status of the transaction's id, asked on a new connection."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("BEGIN")
        landed = conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
        conn.execute("COMMIT")
        conn.execute("BEGIN")
        lost = conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0]
        conn.execute("ROLLBACK")
    assert database._committed(landed) and not database._committed(lost)


def test_the_limits_run_a_step_again_after_a_cut(postgres_url):
    limits = postgres.PostgresLimits(postgres_url)
    first = limits.try_lease("p:m", 2, 60.0)
    assert terminate(postgres_url) == 1
    second = limits.try_lease("p:m", 2, 60.0)
    assert first and second and limits.try_lease("p:m", 2, 60.0) is None


@pytest.mark.slow
def test_backends_terminated_mid_transaction_fail_no_attempt(tmp_path, postgres_url):
    """The backends of the run found inside a transaction are terminated, again and again, while its attempts
    run 4 at a time: each interrupted transaction runs again, so every attempt passes and is paid once."""
    cwd, = copies(tmp_path, 1, cases=120, sleep=0.1)
    runner = faults.start(cwd, "--aqven-concurrency", "4", env={"AQVEN_STORE": postgres_url})
    cut, stop = [], threading.Event()

    def cutter() -> None:
        faults.wait_until(lambda: faults.calls(cwd / "proj"), runner, what="attempts in flight")   # mid-series
        while not stop.is_set():        # a cut every 0.2 s at most: a flaky network, not a dead server
            cut.append(terminate(postgres_url, f"{OURS} AND state LIKE 'idle in transaction%'"))
            time.sleep(0.2 if cut[-1] else 0.01)
    thread = threading.Thread(target=cutter)
    thread.start()
    try:
        out = runner.communicate(timeout=300)[0]
    finally:
        stop.set()
        thread.join()
    planned = faults.attempts_planned(cwd / "proj", "dev")
    paid = faults.calls(cwd / "proj")
    assert runner.returncode == 0, out
    assert sum(cut) >= 2, cut                  # the cuts met transactions in flight
    assert " failed" not in out.splitlines()[-1] and "Traceback" not in out
    assert len(paid) == len(set(paid)) == planned == rows(postgres_url, "SELECT COUNT(*) FROM aqven_spend")[0][0]
    print(f"\n{sum(cut)} backends terminated mid-transaction: {len(paid)} calls for {planned} attempts, 0 failed")


SHORT_WAIT = "import pytest_aqven.storage.postgres as store\nstore.AWAY_S = 2.0\n"   # the test's wait, not 300 s


@pytest.mark.slow
def test_a_server_away_longer_than_the_wait_ends_the_run_with_one_message_and_the_same_command_continues(
        tmp_path, postgres_server, xdist):
    own = pg.create(postgres_server.bin)        # a server of its own: this test stops it
    try:
        url = own.url(own.new_database())
        cwd, = copies(tmp_path, 1, cases=48, gate=3, sleep=0.02)
        (cwd / "proj" / "conftest.py").write_text(SHORT_WAIT)
        args = ("--aqven-holdout", "--aqven-concurrency", "4", *xdist)
        runner = faults.start(cwd, *args, env={"AQVEN_STORE": url})
        faults.wait_until(lambda: len(faults.calls(cwd / "proj")) >= 3, runner, what="attempts in flight")
        own.stop("fast")
        (cwd / "proj" / "go").touch()
        out = runner.communicate(timeout=120)[0]
        own.start()
        assert runner.returncode == pytest.ExitCode.USAGE_ERROR, out
        assert out.count("was away for more than 2 s, so the run stops here") == 1, out
        assert "is away (" in out and "waiting up to 2 s for it to return" in out     # said as it waits
        assert "Traceback" not in out and "INTERNALERROR" not in out
        assert rows(url, "SELECT status FROM aqven_series") == [("running",)]    # not cancelled: it continues
        kept = rows(url, "SELECT COUNT(*) FROM aqven_spend")[0][0]

        again = faults.run(cwd, *args, env={"AQVEN_STORE": url})
        assert again.returncode == 0, again.stdout
        planned = faults.attempts_planned(cwd / "proj")
        assert rows(url, "SELECT COUNT(*), COUNT(DISTINCT attempt_id) FROM aqven_spend") == [(planned, planned)]
        assert rows(url, "SELECT status FROM aqven_series") == [("done",)]
        assert len(faults.finding_files(cwd / "proj")) == 1 and "Traceback" not in again.stdout
        print(f"\nserver away past the wait ({' '.join(xdist) or 'one process'}): exit 4, attempts kept: {kept}; "
              f"the same command: {planned} attempts, {len(faults.calls(cwd / 'proj'))} calls in all")
    finally:
        pg.destroy(own)
