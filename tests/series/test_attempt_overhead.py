"""The per-attempt fast path: at concurrency 1 an attempt runs in the pytest thread, its database calls made
inline, with the same ledger, durability and stopping rules as the scheduler's threads."""
from __future__ import annotations

import subprocess
import time

import pytest

from .. import faults
from ..conftest import XDIST
from .test_series import (
    calls,
    db,
    finished,
    interrupt_and_see_it_kept,
    kill_9_mid_series_then_resume,
    make,
    output,
    pytest_cmd,
    the_series,
    wait_for_calls,
)

THREAD_LOG = '''
import threading
import time
from pathlib import Path


_complete = complete


async def complete(request):
    with open(Path(__file__).parent / "threads.log", "a") as f:
        f.write(threading.current_thread().name + "\\n")
    return await _complete(request)
'''


@pytest.mark.slow
def test_at_concurrency_1_attempts_run_in_the_pytest_thread_and_above_it_on_the_scheduler_loop(pytester):
    root = make(pytester.path, cases=8)
    (root / "provider.py").write_text((root / "provider.py").read_text() + THREAD_LOG)
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)       # the 5 working cases and the verdict
    assert set((root / "threads.log").read_text().split()) == {"MainThread"}
    assert len(finished(root)) == 5 and sorted(calls(root)) == sorted(finished(root))
    assert db(root).execute("SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'").fetchone()[0] == 0
    (root / "threads.log").unlink()
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-new-series",
                                           "--aqven-concurrency", "2")
    result.assert_outcomes(passed=6)
    assert set((root / "threads.log").read_text().split()) == {"aqven-attempts"}


@pytest.mark.slow
def test_ctrl_c_at_concurrency_1_lets_the_running_attempt_finish_and_record(pytester):
    root = make(pytester.path, sleep=0.3)
    provider = (root / "provider.py").read_text()     # paid first, then answered: a Ctrl-C meets paid calls
    wait = "    await asyncio.sleep(0.3)\n"
    (root / "provider.py").write_text(provider.replace(wait, "").replace("    # from the", wait + "    # from the"))
    proc = subprocess.Popen(pytest_cmd(), cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    wait_for_calls(root, 3, proc)
    interrupt_and_see_it_kept(root, proc)      # most likely inside an attempt's 0.3 s answer, after its call


@pytest.mark.slow
def test_kill_9_at_concurrency_1_then_the_same_command_resumes(pytester):
    kill_9_mid_series_then_resume(pytester, make(pytester.path, sleep=0.05, gate=6), 6)


WORKER_MODULES = """
import sys

def pytest_unconfigure(config):
    if hasattr(config, "workerinput"):
        with open("worker_modules.txt", "a") as f:
            f.write(" ".join(sorted({m.split('.')[0] for m in sys.modules} & {"numpy", "scipy"})) + "\\n")
"""


@pytest.mark.slow
def test_an_xdist_worker_collects_and_runs_attempts_without_numpy(pytester):
    """numpy and scipy cost every worker a third of a second: only the controller decides verdicts."""
    make(pytester.path, cases=8)
    pytester.makeconftest(WORKER_MODULES)
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", *XDIST["n2"])
    result.assert_outcomes(passed=6)
    assert (pytester.path / "worker_modules.txt").read_text().split("\n")[:2] == ["", ""]


def test_the_look_ahead_schedules_each_attempt_once_not_again_at_every_item(pytester, monkeypatch):
    from pytest_aqven.series.scheduler import Scheduler

    make(pytester.path, cases=20)
    asked: list[tuple] = []
    submit = Scheduler.submit

    def counted(self, run, variant, case, repeat):
        asked.append((variant, case.name, repeat))
        return submit(self, run, variant, case, repeat)

    monkeypatch.setattr(Scheduler, "submit", counted)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "4")
    result.assert_outcomes(passed=len(set(asked)) + 1)
    # once by the look-ahead, once by the item's own run: was 2N+3 times each at concurrency N
    assert len(asked) <= 2 * len(set(asked)) and len(set(asked)) >= 8


@pytest.mark.slow
def test_two_runs_at_concurrency_1_share_a_series_and_run_no_attempt_twice(pytester):
    """A run_here attempt that the other run holds switches its process to the loop thread, which looks
    further ahead for work instead of waiting for the other run."""
    root = make(pytester.path, sleep=0.05, gate=4)
    runs = [subprocess.Popen(pytest_cmd(), cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True) for _ in range(2)]
    deadline = time.time() + 240
    while len(faults.pids(root)) < 2:
        assert time.time() < deadline and all(r.poll() is None for r in runs), "the second run never made a call"
        time.sleep(0.05)
    (root / "go").touch()
    outs = [output(r, 300) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
    assert len(calls(root)) == len(set(calls(root))) == 40
    assert the_series(root)["count"] == 1 and the_series(root)["status"] == "done"
    assert db(root).execute("SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'").fetchone()[0] == 0


CANCEL_AT_THIRD_CALL = '''
from pytest_aqven.series.db import Store
from pytest_aqven.series.ledger import cancel

_complete = complete


async def complete(request):
    answer = await _complete(request)
    if len((HERE / "calls.log").read_text().splitlines()) == 3:      # `aqven series cancel` from a terminal, meanwhile
        store = Store(Path(__file__).parent)
        (series_id,) = store.db.raw.execute("SELECT series_id FROM aqven_series WHERE status = 'running'").fetchone()
        cancel(store, series_id, "aqven series cancel")
        store.close()
    return answer
'''


def test_at_concurrency_1_a_claim_takes_the_next_ones_with_it_and_finishes_commit_in_groups(pytester, monkeypatch):
    from pytest_aqven.series import db as series_db
    from pytest_aqven.series.db import Store

    root = make(pytester.path, cases=120)
    monkeypatch.setattr(series_db, "GROUP_COMMIT_SECONDS", 60.0)    # the claims commit the finishes, not a timer
    transactions = []
    transaction = Store.transaction

    def counted(self):
        transactions.append(1)
        return transaction(self)

    monkeypatch.setattr(Store, "transaction", counted)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    attempts = len(finished(root))
    result.assert_outcomes(passed=attempts + 1)
    assert attempts >= 60 and sorted(calls(root)) == sorted(finished(root))
    assert len(transactions) < attempts / 3         # two per attempt before: a claim, then a finish
    assert db(root).execute("SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'").fetchone()[0] == 0
    assert db(root).execute("SELECT finished FROM aqven_spend_totals").fetchone()[0] == attempts


@pytest.mark.slow
def test_a_claim_made_ahead_does_not_start_once_the_series_is_cancelled(pytester):
    root = make(pytester.path, cases=40)
    (root / "provider.py").write_text((root / "provider.py").read_text() + CANCEL_AT_THIRD_CALL)
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "-rs")
    assert len(calls(root)) == 3, calls(root)       # the attempts claimed with the third one never started
    assert the_series(root)["status"] == "cancelled"
    result.stdout.fnmatch_lines(["*is cancelled: no new attempt starts*"])
    assert db(root).execute("SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'").fetchone()[0] == 0


SLOW_ON_GW1 = '''
import os

_complete = complete


async def complete(request):
    if os.environ.get("PYTEST_XDIST_WORKER") == "gw1":     # gw0 runs out of work first and steals gw1's queue
        await asyncio.sleep(0.05)
    return await _complete(request)
'''


@pytest.mark.parametrize("dist", ["load", "worksteal"])
@pytest.mark.slow
def test_under_xdist_each_worker_claims_ahead_only_what_it_runs(pytester, dist):
    """worksteal gives queued items to the other worker (here always: gw1 is slow): there no worker claims
    ahead. xdist sets `dist` to "no" on its workers, so they learn the mode from the controller."""
    root = make(pytester.path, cases=60)
    (root / "provider.py").write_text((root / "provider.py").read_text() + SLOW_ON_GW1)
    pytester.makeconftest("""
        from pytest_aqven.plugin.internals import dist_mode

        def pytest_sessionstart(session):
            if hasattr(session.config, "workerinput"):
                print("worker sees", dist_mode(session.config), file=open("dist.log", "a"))
    """)
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", *XDIST["n2"], "--dist", dist,
                                           timeout=120)
    assert (pytester.path / "dist.log").read_text().splitlines() == [f"worker sees {dist}"] * 2
    attempts = len(finished(root))
    result.assert_outcomes(passed=attempts + 1)
    assert attempts >= 30 and sorted(calls(root)) == sorted(finished(root))     # each once
    assert db(root).execute("SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'").fetchone()[0] == 0


def test_a_claim_made_ahead_and_not_started_is_given_back_so_another_runner_takes_it(tmp_path, monkeypatch):
    """The bounded wait: a live runner's claim made ahead blocks another runner at most AHEAD_SECONDS and a
    heartbeat (its item may have gone elsewhere); a started attempt's claim is held until it finishes."""

    from pytest_aqven.series import ledger as ledgers, scheduler as schedulers
    from pytest_aqven.series.db import Store

    from .test_series import open_series, settle

    monkeypatch.setattr(schedulers, "HEARTBEAT_SECONDS", 0.05)
    monkeypatch.setattr(schedulers, "AHEAD_SECONDS", 0.2)
    store, sid = open_series(tmp_path, cap="1")
    sched = schedulers.Scheduler(1)
    try:
        mine = sched.database.ledger(tmp_path)
        assert mine.try_start(sid, "v", "a", 1).kind == "start"
        settle(mine, sid, "a", 0.01)
        started, ahead = mine.batch([("start", sid, "v", "b", 1), ("claim", sid, "v", "c", 1)])
        assert started.kind == ahead.kind == "start"
        sched.claimed[(0, "v", "c", 1)] = (ahead, schedulers.time.monotonic(), tmp_path, sid)
        other = ledgers.Ledger(Store(tmp_path))
        assert other.try_start(sid, "v", "c", 1).kind == "wait"     # claimed ahead by a live runner
        assert other.try_start(sid, "v", "b", 1).kind == "wait"     # running there
        deadline = time.monotonic() + 10
        while other.try_start(sid, "v", "c", 1).kind != "start":
            assert time.monotonic() < deadline, "the claim made ahead was never given back"
            time.sleep(0.05)
        assert not sched.claimed
        assert other.try_start(sid, "v", "b", 1).kind == "wait"     # a started attempt's claim stays
    finally:
        sched.close()
