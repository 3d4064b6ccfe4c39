"""Series that never overspend, never run an attempt twice, survive crashes and broken storage, and are steered
by a person through `aqven series`. Provider calls are counted in a file the test provider appends to."""
from __future__ import annotations

import json
import os
import pty
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_aqven import storage
from pytest_aqven.series import ledger as ledgers
from pytest_aqven.series.cap import SeriesCap
from pytest_aqven.series.db import Store
from pytest_aqven.series.scheduler import Budget
from pytest_aqven.storage import disk, schema

from .. import faults, projects
from ..conftest import XDIST

PACKAGE = "seriesproj"          # 80 cases: 40 on the working half

def make(path: Path, *, cases: int = 80, cost: float | None = 0.01, sleep: float = 0.0, cap: float | None = None,
         repeats: int = 1, extra: str = "", answer: str = '{"label": "positive"}', files: dict | None = None,
         gate: int = 0) -> Path:
    root = path / "proj"
    aqven = projects.FILES["aqven.yaml"].rstrip(" ")
    if cap is not None:
        aqven += f"        research:\n          spend_cap_usd: {cap}\n"
    return projects.make(root, cases, repeats=repeats, extra=extra, package=PACKAGE, files={
        "aqven.yaml": aqven, "provider.py": faults.provider(sleep=sleep, cost=cost, answer=answer, gate=gate),
        **(files or {})})


def calls(root: Path) -> list[str]:
    """variant|case|repeat of every paid call (the counting provider of tests/faults.py)."""
    return [call.split("|", 1)[1] for call in faults.calls(root)]


def db(root: Path) -> sqlite3.Connection:
    return sqlite3.connect(root / ".aqven" / "aqven.sqlite")


def the_series(root: Path) -> dict:
    rows = db(root).execute("SELECT series_id, status, record FROM aqven_series ORDER BY created_at DESC").fetchall()
    sid, status, record = rows[0]
    return {**json.loads(record), "series_id": sid, "status": status, "count": len(rows)}


def finished(root: Path) -> set[str]:
    return {f"{v}|{c}|{r}" for v, c, r in db(root).execute(
        "SELECT variant_id, case_name, repeat FROM aqven_series_attempts WHERE state = 'finished'")}


def spent(root: Path, series_id: str) -> float:
    return db(root).execute("SELECT SUM(spend_usd) FROM aqven_spend WHERE series_id = ?", (series_id,)).fetchone()[0]


def pytest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "proj", "-p", "no:cacheprovider", "-q", *args]


def aqven(*args: str, cwd: Path, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_aqven.cli", *args], cwd=cwd, stdin=stdin,
                          capture_output=True, text=True, timeout=120)


def approve_on_a_terminal(cwd: Path, series_id: str, answers: list[str], *args: str) -> str:
    """Drive `aqven series approve` through a pseudo-terminal, typing the answers as a person would."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pytest_aqven.cli", "series", "approve", series_id,
                             "--path", "proj", *args], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    code, out = faults.drive(proc, master, answers=answers)
    assert code == 0, out
    return out


def wait_for_calls(root: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while len(calls(root)) < n:
        assert proc.poll() is None, "the run ended before it was interrupted"
        if time.time() > deadline:
            output(proc, 0)
        time.sleep(0.05)


def output(proc: subprocess.Popen, timeout: float) -> str:
    """The run's output once it ended. One still running after `timeout` dumps its threads' stacks into the
    failure (pytest's faulthandler, at SIGABRT) and ends: no run outlives its test."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        try:
            out = proc.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            out = proc.communicate()[0]
        pytest.fail(f"the run was still running after {timeout} s; its threads then:\n{out}")


# --- the ledger, decision by decision -------------------------------------------------------------

def open_series(root: Path, cap: str = "0.10") -> tuple[Store, str]:
    store = Store(root)
    sid, _ = store.open_series(plan_key="k", experiment_id="e", flow_id="f", dataset_id="d", split="dev",
                               question="threshold", record={"cap_usd": cap, "cases": [], "repeats": 1,
                                                             "variants": []})
    return store, sid


def settle(ledger, sid, case, cost, unpriced=0):
    """The attempt finished: its spend, claim and record committed."""
    record = {"series_id": sid, "variant": "v", "case": case, "repeat": 1, "cost_usd": cost, "check_cost_usd": 0.0,
              "unpriced_calls": unpriced, "outcome": "ok", "started_at": 1.0, "finished_at": 2.0}
    ledger.finish_later(record, faults.held(ledger, record))
    ledger.store.flush()


def test_the_first_attempt_runs_alone_then_its_cost_is_the_reserve_and_the_series_pauses_near_the_cap(tmp_path):
    store, sid = open_series(tmp_path, cap="0.10")
    ledger = ledgers.Ledger(store)
    first = ledger.try_start(sid, "v", "a", 1)
    assert first.kind == "start" and first.limit_usd == pytest.approx(0.10)
    assert ledger.try_start(sid, "v", "b", 1).kind == "wait"           # no price yet: the first runs alone
    settle(ledger, sid, "a", 0.02)
    starts = [ledger.try_start(sid, "v", c, 1) for c in "bcdef"]
    # spent 0.02 + reserve 0.02 x running < 0.09: b, c, d start (0.02+0.06=0.08), e sees 0.08 < 0.09 and starts
    assert [d.kind for d in starts] == ["start", "start", "start", "start", "wait"]
    assert starts[1].limit_usd == pytest.approx(0.10 - 0.04)          # cap - (spent + reserve x running)
    for c in "bcde":
        settle(ledger, sid, c, 0.02)
    paused = ledger.try_start(sid, "v", "f", 1)                        # 0.10 spent, nothing running
    assert paused.kind == "paused" and f"aqven series approve {sid}" in paused.why
    record = store.series(sid)
    assert record["status"] == "awaiting_approval"
    assert record["pause"] == {"reason": "spend_near_cap", "spent_usd": 0.1}
    ledgers.approve(store, sid, ledgers.Decimal("0.40"), "someone")
    assert ledger.try_start(sid, "v", "f", 1).kind == "start"
    assert store.series(sid)["approved_by"] == "someone"


def test_a_claim_of_a_dead_runner_is_taken_over_and_a_live_one_is_waited_for(tmp_path):
    store, sid = open_series(tmp_path, cap="1")
    other = ledgers.Ledger(Store(tmp_path))
    assert other.try_start(sid, "v", "a", 1).kind == "start"
    settle(other, sid, "a", 0.01)
    assert other.try_start(sid, "v", "b", 1).kind == "start"
    assert other.try_start(sid, "v", "c", 1).kind == "start"
    me = ledgers.Ledger(store)
    assert me.try_start(sid, "v", "b", 1).kind == "wait"               # alive: never run twice
    assert me.try_start(sid, "v", "a", 1).kind == "reused"             # finished: its record is reused
    with store.transaction() as conn:                                  # the other process died (kill -9)
        conn.raw.execute("UPDATE aqven_runners SET pid = 999999999 WHERE runner_id = ?", (other.runner_id,))
    assert me.try_start(sid, "v", "b", 1).kind == "start"
    with store.transaction() as conn:
        conn.raw.execute("UPDATE aqven_runners SET pid = ?, heartbeat_at = 0 WHERE runner_id = ?",
                     (os.getpid(), other.runner_id))
    assert me.try_start(sid, "v", "c", 1).kind == "start"              # heartbeat older than the lease


def assert_totals_are_the_sums(conn: sqlite3.Connection) -> None:
    """The running spend totals equal what summing every spend row gives, series by series."""
    totals = {r[0]: r[1:] for r in conn.execute("SELECT * FROM aqven_spend_totals")}
    sums = {r[0]: r[1:] for r in conn.execute("SELECT series_id, SUM(spend_usd), MAX(spend_usd), COUNT(*), "
                                               "SUM(unpriced_calls > 0) FROM aqven_spend GROUP BY series_id")}
    assert totals.keys() == sums.keys() and sums
    for series_id, (spent, reserve, n, unpriced) in sums.items():
        assert totals[series_id] == (pytest.approx(spent, abs=1e-12), reserve, n, unpriced)


def test_the_running_spend_total_is_the_sum_of_the_spend_rows_through_releases_and_takeovers(tmp_path):
    store, sid = open_series(tmp_path, cap="1")
    other_store, _ = open_series(tmp_path, cap="1")
    other = ledgers.Ledger(other_store)
    me = ledgers.Ledger(store)
    assert me.try_start(sid, "v", "a", 1).kind == "start"
    settle(me, sid, "a", 0.03, unpriced=1)
    for case in "bcd":
        assert other.try_start(sid, "v", case, 1).kind == "start"
    settle(other, sid, "b", 0.01)
    other.release(sid, "v", "c", 1)                                     # stopped before any call was paid
    with store.transaction() as conn:                                  # the other runner died with d running
        conn.raw.execute("UPDATE aqven_runners SET pid = 999999999 WHERE runner_id = ?", (other.runner_id,))
    assert me.try_start(sid, "v", "d", 1).kind == "start"              # taken over
    settle(me, sid, "d", 0.05)
    spent = ledgers.series_spend(store, sid)
    assert (spent.spent_usd, spent.reserve_usd, spent.finished, spent.unpriced_attempts, spent.running) == \
        (pytest.approx(0.09), 0.05, 3, 1, 0)
    assert_totals_are_the_sums(store.db.raw)


def test_unpriced_attempts_make_the_spend_a_lower_bound_and_the_hard_limit_refuses_the_next_call(tmp_path):
    store, sid = open_series(tmp_path, cap="1")
    ledger = ledgers.Ledger(store)
    ledger.try_start(sid, "v", "a", 1)
    settle(ledger, sid, "a", 0.0, unpriced=2)
    assert ledgers.series_spend(store, sid).text("1") == \
        "at least $0.0000 (1 attempt on a model without a known price) of its $1.00 cap"
    budget = Budget(0.05)
    budget.before()
    budget.add(type("R", (), {"cost_usd": 0.06})())
    with pytest.raises(Exception) as err:
        budget.before()
    assert getattr(err.value, "code", None) == "budget_exceeded"        # outcome budget_cut


def test_an_attempt_that_would_overrun_the_cap_alone_is_cut(pytester):
    agent = projects.FILES["agents/bot.yaml"].rstrip(" ") + "        output:\n          retries: 3\n"
    root = make(pytester.path, cases=8, cap=0.5, cost=0.3, answer="not json", files={"agents/bot.yaml": agent})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs")
    (record,) = [json.loads(r) for (r,) in db(root).execute("SELECT record FROM aqven_series_attempts")]
    assert record["outcome"] == "budget_cut" and record["error_code"] == "budget_exceeded"
    assert len(calls(root)) == 2                 # the third call was refused: the attempt had spent $0.60 of $0.50
    assert "budget_exceeded" in result.stdout.str()
    assert the_series(root)["status"] == "awaiting_approval"


def test_the_cap_source_and_an_explicit_cap_above_the_project_cap(tmp_path):
    from pytest_aqven.project.loader import load_project
    from pytest_aqven.series.cap import series_cap
    root = make(tmp_path, cap=0.5)
    spec = load_project(root).spec
    assert series_cap(root, spec) == SeriesCap(ledgers.Decimal("0.5"), ledgers.Decimal("0.5"), "project")
    (root / ".aqven").mkdir()
    (root / ".aqven" / "local.yaml").write_text("research:\n  spend_cap_usd: 3\n")
    assert series_cap(root, spec).project_cap_source == "override"
    explicit = series_cap(root, spec, option="4")
    assert explicit.needs_approval and "waits for approval" in explicit.describe()
    small = series_cap(root, spec, option="0.005")          # under a cent: its digits, never $0.00 or $0.01
    assert small.describe() == "cap $0.005 (--aqven-cap), project cap $3.00 (override)"
    assert ledgers.Spend(0.0012, 0.0, 1, 0).text(ledgers.Decimal("0.005")) == "$0.0012 of its $0.005 cap"


# --- the plugin --------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_cap_is_never_exceeded_under_four_workers_with_eight_attempts_each(pytester, capsys):
    root = make(pytester.path, cap=0.2)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-n", "4", "--aqven-concurrency", "8", "-rs")
    s = the_series(root)
    paid = len(calls(root)) * 0.01
    with capsys.disabled():
        print(f"\ncap test: {len(calls(root))} calls, spend ${paid:.2f} (ledger ${spent(root, s['series_id']):.2f}) "
              f"of the $0.20 cap")
    assert paid <= 0.20 + 1e-9
    assert spent(root, s["series_id"]) == pytest.approx(paid)
    assert s["status"] == "awaiting_approval" and s["pause"]["reason"] == "spend_near_cap"
    assert 0.17 <= s["pause"]["spent_usd"] <= 0.20
    assert "aqven series approve" in result.stdout.str()
    assert len(calls(root)) == len(finished(root))                    # every paid call is recorded


@pytest.mark.slow
def test_pause_approve_on_a_terminal_and_resume(pytester):
    root = make(pytester.path, cap=0.2)
    first = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "4", "-rs")
    sid = the_series(root)["series_id"]
    assert the_series(root)["status"] == "awaiting_approval"
    assert f"aqven series approve {sid}" in first.stdout.str()
    refused = aqven("series", "approve", sid, "--path", "proj", cwd=pytester.path)    # no terminal: refused
    assert refused.returncode == 2 and "interactive terminal" in refused.stderr
    out = approve_on_a_terminal(pytester.path, sid, ["", "yes"])                      # default: double the cap
    assert "[0.40]" in out and float(the_series(root)["cap_usd"]) == 0.40
    pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "4")
    s = the_series(root)
    assert s["status"] == "awaiting_approval" and spent(root, sid) <= 0.40 + 1e-9 and len(finished(root)) < 40
    approve_on_a_terminal(pytester.path, sid, ["1.00", "yes"])
    last = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "4")
    assert the_series(root)["status"] == "done" and the_series(root)["count"] == 1
    assert "signal" in last.stdout.str()
    assert sorted(calls(root)) == sorted(finished(root)) and len(calls(root)) == 40     # none ran twice
    shown = aqven("series", "show", sid[:8], "--path", "proj", cwd=pytester.path).stdout
    assert "status done" in shown and "$0.4000 of its $1.00 cap" in shown


def test_a_cap_above_the_project_cap_waits_for_approval_before_anything_runs(pytester):
    root = make(pytester.path, cases=8)
    plan = pytester.runpytest("proj", "-p", "no:cacheprovider", "--collect-only", "--aqven-cap", "2")
    plan.stdout.fnmatch_lines(["*cap $2.00 (--aqven-cap), project cap $1.00 (default): above the project cap*"])
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-cap", "2", "-rs")
    s = the_series(root)
    assert s["status"] == "awaiting_approval" and s["pause"]["reason"] == "cap_above_project"
    assert calls(root) == [] and "cap_above_project" in result.stdout.str()
    out = approve_on_a_terminal(pytester.path, s["series_id"], ["", "yes"])
    assert "[2.00]" in out
    pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-cap", "2")
    assert the_series(root)["status"] == "done" and len(calls(root)) == 5


def test_rerunning_the_command_never_lowers_a_cap_a_person_approved(pytester, xdist):
    """`aqven series approve <id> --cap 0.5`, then the same command with its --aqven-cap 0.05: the series goes on
    past $0.05 under the approved cap, the series lines say it holds, and the verdict table shows that cap."""
    root = make(pytester.path, cases=24)
    command = ("proj", "-p", "no:cacheprovider", "--aqven-cap", "0.05", "--aqven-json", "series.json", *xdist)
    first = pytester.runpytest(*command).stdout.str()
    s = the_series(root)
    assert s["status"] == "awaiting_approval" and s["pause"]["reason"] == "spend_near_cap"
    assert any(line.startswith("rate_ok ") and line.endswith(" of $0.05") for line in first.splitlines()), first
    assert spent(root, s["series_id"]) <= 0.05 + 1e-9
    out = approve_on_a_terminal(pytester.path, s["series_id"], ["yes"], "--cap", "0.5")
    assert "continues under a cap of $0.50" in out
    result = pytester.runpytest(*command)
    text = result.stdout.str()
    s = the_series(root)
    assert s["status"] == "done" and s["cap_usd"] == "0.5" and spent(root, s["series_id"]) > 0.05
    assert len(calls(root)) == len(finished(root)) == 14                  # every working case, none twice
    assert ("  the approved cap $0.50 holds (approved by " in text and
            "): --aqven-cap $0.05 does not lower a cap a person approved" in text), text
    series_line = next(line for line in text.splitlines() if line.startswith("rate_ok series "))
    assert "spent $0.1400 of its $0.50 cap" in series_line, series_line
    row = next(line for line in text.splitlines() if line.startswith("rate_ok ") and line.endswith(" of $0.5"))
    assert "$0.14 of $0.5" in row, row
    assert json.loads((pytester.path / "series.json").read_text())["series"][0]["spend"]["cap_usd"] == 0.5


@pytest.mark.slow
def test_two_concurrent_runs_of_one_series_share_the_work(pytester, capsys):
    root = make(pytester.path, sleep=0.05, gate=8)

    def start() -> subprocess.Popen:
        return subprocess.Popen(pytest_cmd("--aqven-concurrency", "4"), cwd=pytester.path, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)

    def until(done, what: str) -> None:
        deadline = time.time() + 240
        while not done():
            assert time.time() < deadline and all(r.poll() is None for r in runs), what
            time.sleep(0.05)

    # the second run starts once the first holds unanswered calls (its answers wait for the test's "go"): the
    # attempts just ahead of the second run's own items are then all claimed by the first, and it must look
    # further ahead for work instead of idling until the first run's calls end
    runs = [start()]
    until(lambda: len(calls(root)) >= 8 + 3, "the first run never held 4 calls")
    runs.append(start())
    until(lambda: len(faults.pids(root)) == 2, "the second run never made a call while the first held its calls")
    (root / "go").touch()
    outs = [output(r, 300) for r in runs]
    with capsys.disabled():
        print(f"\ntwo runs: {len(calls(root))} provider calls / {len(finished(root))} attempts")
    assert [r.returncode for r in runs] == [0, 0], outs
    assert len(calls(root)) == len(set(calls(root))) == 40
    assert the_series(root)["count"] == 1 and the_series(root)["status"] == "done"
    assert all("rate_ok (dev, 40/40 attempts): signal" in o for o in outs), outs


def _resumes_without_rerunning(root: Path, cwd: Path, killed: list) -> None:
    kept = finished(root)
    before = len(calls(root))
    assert kept, "nothing finished before the kill"
    done = subprocess.run(pytest_cmd("--aqven-concurrency", "4"), cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout
    again = set(calls(root)[before:])
    assert not again & kept                                          # no finished attempt ran again
    assert len(finished(root)) == 40 and the_series(root)["status"] == "done"
    assert db(root).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert_totals_are_the_sums(db(root))


def wait_for_finished(root: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until some attempt is committed (group commit writes within 100 ms) while later answers are held."""
    deadline = time.time() + timeout
    while not (root / ".aqven" / "aqven.sqlite").exists() or not finished(root):
        assert proc.poll() is None, "the run ended before any attempt finished"
        if time.time() > deadline:
            output(proc, 0)
        time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_of_the_runner_mid_series_then_the_same_command_resumes(pytester):
    kill_9_mid_series_then_resume(pytester, make(pytester.path, sleep=0.1, gate=10), 10, "--aqven-concurrency", "4")


def kill_9_mid_series_then_resume(pytester, root: Path, gate: int, *args: str) -> None:
    """kill -9 the runner once `gate` calls are made and one attempt is finished, then rerun the command."""
    proc = subprocess.Popen(pytest_cmd(*args), cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_calls(root, gate, proc)
    wait_for_finished(root, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (root / "go").touch()
    _resumes_without_rerunning(root, pytester.path, [proc.pid])


@pytest.mark.slow
def test_kill_9_of_an_xdist_worker_mid_series_then_the_same_command_resumes(pytester):
    root = make(pytester.path, sleep=0.1, gate=10)
    proc = subprocess.Popen(pytest_cmd(*XDIST["n2"], "--aqven-concurrency", "4"), cwd=pytester.path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_calls(root, 10, proc)
    wait_for_finished(root, proc)
    workers = faults.pids(root)
    os.kill(sorted(workers)[0], signal.SIGKILL)
    (root / "go").touch()
    proc.wait(timeout=300)
    _resumes_without_rerunning(root, pytester.path, sorted(workers)[:1])


@pytest.mark.slow
def test_ctrl_c_mid_series_stops_new_attempts_records_the_running_ones_and_keeps_the_series(pytester):
    root = make(pytester.path, sleep=0.2)
    proc = subprocess.Popen(pytest_cmd("--aqven-concurrency", "4"), cwd=pytester.path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for_calls(root, 6, proc)
    interrupt_and_see_it_kept(root, proc)


def interrupt_and_see_it_kept(root: Path, proc: subprocess.Popen) -> None:
    """Ctrl-C the run: it exits interrupted, the series stays for the same command to continue, every paid call
    recorded, no claim left."""
    proc.send_signal(signal.SIGINT)
    out = output(proc, 120)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert the_series(root)["status"] == "running" and "Run the same command to continue" in out
    assert sorted(calls(root)) == sorted(finished(root)) and len(finished(root)) < 40   # paid = recorded
    assert db(root).execute("SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'").fetchone()[0] == 0


@pytest.mark.parametrize("run", [["--aqven-concurrency", "1"], ["--aqven-concurrency", "4"],
                                 [*XDIST["n2"], "--aqven-concurrency", "4"]], ids=["1", "4", "xdist"])
@pytest.mark.slow
def test_ctrl_c_once_every_attempt_is_recorded_cancels_nothing_and_the_same_command_decides(pytester, run):
    """A stop cancels the series it cut short; one whose every attempt is recorded stays for the rerun to decide,
    with no call: cancelling it would throw away every attempt it paid for."""
    root = make(pytester.path, sleep=0.01)
    pytester.makeconftest('''
        import os, signal
        reported = []
        def pytest_runtest_logreport(report):
            if report.when == "call" and not report.nodeid.endswith("::verdict"):
                reported.append(report.nodeid)
                if len(reported) == 40:                 # the last attempt reported: Ctrl-C
                    os.kill(os.getpid(), signal.SIGINT)
    ''')
    first = subprocess.run(pytest_cmd(*run), cwd=pytester.path, capture_output=True, text=True, timeout=300)
    assert first.returncode == pytest.ExitCode.INTERRUPTED, first.stdout + first.stderr
    assert the_series(root)["status"] == "running" and len(finished(root)) == len(calls(root)) == 40
    (pytester.path / "conftest.py").unlink()
    again = subprocess.run(pytest_cmd(*run), cwd=pytester.path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    s = the_series(root)
    assert s["status"] == "done" and s["verdict"]["state"] != "invalid" and s["count"] == 1
    assert len(calls(root)) == 40 and "40 attempts ran" not in again.stdout


def test_x_stops_new_attempts_and_cancels_the_series(pytester):
    root = make(pytester.path, sleep=0.05)
    pytester.makeconftest('''
        import pytest
        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_call(item):
            yield
            if item.name == "1" and item.parent.name == "case_06":
                raise AssertionError("a failing test")
    ''')
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-x", "--aqven-concurrency", "4")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert the_series(root)["status"] == "cancelled"
    assert len(finished(root)) < 20 and sorted(calls(root)) == sorted(finished(root))


@pytest.mark.slow
def test_new_series_starts_afresh_and_cancels_the_unfinished_one(pytester):
    root = make(pytester.path, cases=8)
    pytester.runpytest("proj", "-p", "no:cacheprovider", "-k", "case_00 or case_01")
    old = the_series(root)["series_id"]
    pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-new-series", *XDIST["n2"])
    rows = dict(db(root).execute("SELECT series_id, status FROM aqven_series"))
    assert rows.pop(old) == "cancelled" and list(rows.values()) == ["done"]


# --- storage faults ------------------------------------------------------------------------------

def _one_message(result, *needles: str) -> None:
    text = result.stderr.str() + result.stdout.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "Traceback" not in text and text.count("pytest-aqven:") == 1, text
    for needle in needles:
        assert needle in text, text


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
@pytest.mark.slow
def test_a_damaged_database_stops_the_session_with_one_message_and_is_kept_aside(pytester, damage):
    root = make(pytester.path, cases=8)
    pytester.runpytest("proj", "-p", "no:cacheprovider")
    path = root / ".aqven" / "aqven.sqlite"
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(b"this is not a database" * 100 if damage == "garbage" else data[:len(data) // 2])
    damaged = path.read_bytes()
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", *XDIST["n2"])
    _one_message(result, str(path), "moved aside to", "Rerun the same command")
    aside = [p for p in path.parent.iterdir() if ".damaged-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert len(aside) == 1 and aside[0].read_bytes() == damaged and not path.exists()
    check = aqven("db", "check", str(aside[0]), cwd=pytester.path)
    assert check.returncode == 1 and "damaged" in check.stdout
    assert pytester.runpytest("proj", "-p", "no:cacheprovider").ret == 0                  # a new database
    assert aqven("db", "check", "--path", "proj", cwd=pytester.path).returncode == 0


def test_a_database_another_process_holds_is_busy_not_damaged(tmp_path, monkeypatch):
    path = tmp_path / "aqven.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO t VALUES (1)")
    monkeypatch.setattr(disk, "BUSY_SECONDS", 0.1)
    try:
        assert storage.check_file(path) is None
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert not [p for p in tmp_path.iterdir() if ".damaged-" in p.name]


def _immutable(path: Path):
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")


@pytest.mark.parametrize("what", [".aqven", "aqven.sqlite"])
def test_read_only_storage_is_one_clear_error_at_start(pytester, what):
    root = make(pytester.path, cases=8)
    pytester.runpytest("proj", "-p", "no:cacheprovider", "-k", "case_00")
    target = root / ".aqven" if what == ".aqven" else root / ".aqven" / "aqven.sqlite"
    _immutable(target)
    try:
        result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    finally:
        subprocess.run(["chattr", "-i", str(target)])
    _one_message(result, str(target), "writable")


def test_an_old_database_is_migrated_and_its_spend_counted(tmp_path):
    path = tmp_path / ".aqven" / "aqven.sqlite"
    path.parent.mkdir()
    old = sqlite3.connect(path)
    old.executescript(schema.SERIES)
    old.execute("INSERT INTO aqven_schema_versions VALUES ('series', 1)")
    old.execute("INSERT INTO aqven_series VALUES ('s', 'e', 'f', 'd', 'dev', 'threshold', 'running', 'k', 0, NULL, "
                "'{\"cap_usd\": \"1\"}')")
    old.execute("INSERT INTO aqven_series_attempts VALUES ('a', 's', 'v', 'c', 1, 'finished', 'ok', '0.25', '0.0', "
                "0, 1, '{\"unpriced_calls\": 0}')")
    old.commit()
    old.close()
    store = Store(tmp_path)
    assert store.db.raw.execute("SELECT version FROM aqven_schema_versions").fetchone()[0] == schema.LATEST == 4
    assert ledgers.series_spend(store, "s").spent_usd == pytest.approx(0.25)
    assert_totals_are_the_sums(store.db.raw)


# --- large datasets ----------------------------------------------------------------------------------

def test_deselected_experiments_cost_nothing_at_collection_and_a_big_unsized_series_warns(pytester, monkeypatch):
    from pytest_aqven.plugin import collect
    from pytest_aqven.series import lifecycle
    make(pytester.path, cases=8)
    planned = []
    real = collect.SeriesRun
    monkeypatch.setattr(collect, "SeriesRun", lambda *a, **k: planned.append(1) or real(*a, **k))
    for args in (["-m", "not aqven"], ["-k", "not rate_ok"], ["-k", "not aqven and case_00"]):
        result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--collect-only", "-q", *args)
        assert planned == [] and not [l for l in result.outlines if "::" in l], args
    monkeypatch.setattr(lifecycle, "BIG_DATASET", 3)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--collect-only", "-k", "rate_ok and case_00")
    assert planned == [1]
    result.stdout.fnmatch_lines(["*plan.cases is unset and 5 cases are selected*set plan.cases*--aqven-cases N"])


def test_a_killed_process_not_yet_reaped_holds_no_claim():
    """An xdist worker killed with kill -9 stays a zombie until its parent reaps it: its claims are free at
    once, not after the 30 s lease."""
    _gone = ledgers._gone
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not _gone(child.pid)
        child.kill()
        deadline = time.time() + 10
        while not _gone(child.pid):                  # a zombie: os.kill(pid, 0) still succeeds
            assert time.time() < deadline
            time.sleep(0.01)
        assert child.poll() is not None and _gone(child.pid)    # reaped now: gone for good
    finally:
        child.kill()
        child.wait()
