"""Storage faults are one message: a disk too full to start refuses before anything is paid, a disk that
fills up mid-run stops the run saying what to free and that the same command continues (no INTERNALERROR,
no traceback per item), and a database removed mid-run (`git clean -xdf`) is noticed at the next
transaction: the run stops and pays nothing more into the removed file."""
from __future__ import annotations

import re
import shutil

import pytest

from .. import faults

# the test project's conftest: no disk has this much free, so the preflight refuses
NO_SPACE = "from pytest_aqven.storage import disk\ndisk.MIN_FREE_BYTES = 2 ** 62\n"
# the test project's conftest: with FAULT_DB_FULL=N, once N calls were paid the database cannot grow (SQLite's
# max_page_count: what a full disk does to it, without filling one)
DB_FULL = '''
import contextlib, os, pathlib
from pytest_aqven.series import db
HERE = pathlib.Path(__file__).parent
_transaction = db.Store.transaction


@contextlib.contextmanager
def _full(self):
    with _transaction(self) as tx:
        if os.environ.get("FAULT_DB_FULL") and (HERE / "calls.log").exists() \\
                and len((HERE / "calls.log").read_text().splitlines()) >= int(os.environ["FAULT_DB_FULL"]):
            pages = tx.raw.execute("PRAGMA page_count").fetchone()[0]
            tx.raw.execute(f"PRAGMA max_page_count = {pages}")
        yield tx
db.Store.transaction = _full
'''


def one_message(out: str, text: str) -> None:
    assert out.count(text) == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out and "disk is full" not in out, out


def test_a_disk_too_full_to_start_refuses_before_anything_is_paid(tmp_path, xdist):
    root = faults.make(tmp_path, cases=24, files={"conftest.py": NO_SPACE})
    result = faults.run(tmp_path, *xdist)
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, out
    one_message(out, f"pytest-aqven: the disk holding {root} has ")
    assert "free space on that disk (old .aqven/*.damaged-* files, caches, build output), then run the same " \
           "command; nothing was run." in out
    assert faults.calls(root) == []


@pytest.mark.slow
def test_a_disk_that_fills_up_mid_run_stops_it_with_one_message_and_the_same_command_continues(tmp_path, xdist):
    root = faults.make(tmp_path, cases=48, files={"conftest.py": DB_FULL})
    full = faults.run(tmp_path, *xdist, "--aqven-concurrency", "2", env={"FAULT_DB_FULL": "3"})
    out = full.stdout + full.stderr
    assert full.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert f"the disk holding {root / '.aqven' / 'aqven.sqlite'} is full (" in out
    assert "the run stops here and takes no more attempts; what was committed is kept. Free space on that disk, " \
           "then run the same command: it continues the series." in out
    assert "Traceback" not in out and "INTERNALERROR" not in out and "database or disk is full" not in out, out
    planned = faults.attempts_planned(root, "dev")
    assert len(faults.calls(root)) < planned
    again = faults.run(tmp_path, *xdist, "--aqven-concurrency", "2")        # space freed
    assert again.returncode == 0, again.stdout
    assert [s["status"] for s in faults.series(root)] == ["done"]
    assert len(set(faults.calls(root))) == planned


@pytest.mark.slow
def test_a_disk_that_fills_up_mid_run_still_shows_the_verdicts_of_the_series_it_finished(tmp_path, xdist):
    """The first experiment's attempts were all recorded when the disk filled up during the second's: its verdict
    is decided and shown (recorded if the disk still takes it); the second stays open (not cancelled), and the
    same command finishes it, running no attempt twice."""
    root = faults.make(tmp_path, cases=60, experiments=("a_first", "b_second"), files={"conftest.py": DB_FULL})
    full = faults.run(tmp_path, *xdist, env={"FAULT_DB_FULL": "34"})      # a_first has 23 working attempts
    out = full.stdout + full.stderr
    assert full.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert out.count("the run stops here and takes no more attempts; what was committed is kept. Free space on "
                     "that disk, then run the same command: it continues the series.") == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out and "database or disk is full" not in out, out
    assert re.search(r"^a_first \(dev, (\d+)/\1 attempts\): signal - Signal on dev", out, re.M), out
    assert "b_second series" not in out and not re.search(r"^b_second \(dev", out, re.M), out
    # a_first's decision is recorded when the disk still had room for it, else by the same command; none cancelled
    status = {s["experiment_id"]: s["status"] for s in faults.series(root)}
    assert status["a_first"] in ("done", "running") and status["b_second"] == "running", status
    again = faults.run(tmp_path, *xdist)
    assert again.returncode == 0, again.stdout
    assert re.search(r"^b_second \(dev, (\d+)/\1 attempts\): signal", again.stdout, re.M), again.stdout
    assert len(set(faults.calls(root))) == faults.attempts_planned(root, "dev")


@pytest.mark.slow
def test_the_database_removed_mid_run_stops_it_and_nothing_more_is_paid_into_it(tmp_path, xdist):
    root = faults.make(tmp_path, cases=48, gate=4, sleep=0.01)
    proc = faults.start(tmp_path, *xdist, "--aqven-concurrency", "2")
    faults.wait_until(lambda: len(faults.calls(root)) >= 4, proc, what="calls in flight")
    shutil.rmtree(root / ".aqven")             # as `git clean -xdf` does
    paid = len(faults.calls(root))
    (root / "go").touch()
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert out.count(f"the project database {root / '.aqven' / 'aqven.sqlite'} was removed or replaced during the "
                     f"run") == 1, out
    assert "Traceback" not in out and "INTERNALERROR" not in out and "status None" not in out, out
    workers = 2 if xdist else 1
    assert len(faults.calls(root)) <= paid + 2 * workers       # at most the attempts already in flight
    again = faults.run(tmp_path, *xdist, "--aqven-concurrency", "2")
    assert again.returncode == 0, again.stdout


# the test project's conftest: with FAULT_CLOCK_STEP=120 this process's wall clock runs 120 s ahead (NTP, or
# faketime, stepped it); a 3 s lease, so a step counted as time would take the other runner's claims
CLOCK_STEP = '''
import os, time
from pytest_aqven.series import ledger
ledger.LEASE_SECONDS = 3.0
if os.environ.get("FAULT_CLOCK_STEP"):
    _time, _step = time.time, float(os.environ["FAULT_CLOCK_STEP"])
    time.time = lambda: _time() + _step
'''


@pytest.mark.slow
def test_a_clock_step_on_the_machine_takes_no_live_claim(tmp_path):
    root = faults.make(tmp_path, cases=24, gate=4, sleep=0.01, files={"conftest.py": CLOCK_STEP})
    first = faults.start(tmp_path, "--aqven-concurrency", "2")
    faults.wait_until(lambda: len(faults.calls(root)) >= 4, first, what="calls in flight")
    second = faults.start(tmp_path, "--aqven-concurrency", "2", env={"FAULT_CLOCK_STEP": "120"})
    faults.wait_until(lambda: len(faults.calls(root)) >= 6, second, what="the second runner's calls")
    (root / "go").touch()
    outs = [proc.communicate(timeout=300)[0] for proc in (first, second)]
    assert first.returncode == second.returncode == 0, outs
    assert not any("discarded" in out for out in outs), outs
    paid = faults.calls(root)
    assert len(paid) == len(set(paid)) == faults.attempts_planned(root, "dev")     # none paid twice
