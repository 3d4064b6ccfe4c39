"""Runners on many machines, one PostgreSQL store: each runner is a pytest run in its own copy of the project
(as a CI shard's checkout), all of them on one database of the session's server.

- two runners of one held-out experiment make the provider calls of one run, spend what one run spends, write
  one finding (the same file in both checkouts, and `aqven findings rebuild` writes it in a third) and reach
  the verdict of one run;
- four runners against one cap spend no more than the cap together;
- a runner killed with -9 on another "machine" (its own hostname: a UTS namespace) leaves claims that the
  other runner takes over once the lease passes, and finishes the series with every attempt paid once."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import psycopg
import pytest

from pytest_aqven import storage
from pytest_aqven.series import ledger
from pytest_aqven.series.db import Store
from pytest_aqven.series.ledger import LEASE_SECONDS, Ledger

from .. import faults
from ..conftest import XDIST
from . import server as pg

ENV = {"AQVEN_STORE": ""}


def copies(tmp_path: Path, n: int, **project) -> list[Path]:
    """n checkouts of one project (cwd of each runner; the project is <cwd>/proj)."""
    first = tmp_path / "m0"
    faults.make(first, **project)
    for i in range(1, n):
        shutil.copytree(first, tmp_path / f"m{i}")
    return [tmp_path / f"m{i}" for i in range(n)]


def rows(url: str, sql: str) -> list[tuple]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(sql).fetchall()


def verdicts(out: str) -> list[str]:
    """The verdict lines, without the attempts each runner ran itself."""
    return [line for line in out.splitlines() if re.match(r"^\w+ \((holdout|dev), \d+/\d+ attempts\): ", line)]


@pytest.mark.slow
def test_two_runners_make_the_calls_of_one_run_and_write_one_finding(tmp_path, postgres_server):
    one, a, b, fresh = copies(tmp_path, 4, cases=48, gate=2, sleep=0.02)
    (one / "proj" / "go").touch()
    alone = faults.run(one, "--aqven-holdout", "--aqven-concurrency", "4", "--aqven-store",
                       postgres_server.url(postgres_server.new_database()), env=ENV)
    assert alone.returncode == 0, alone.stdout

    url = postgres_server.url(postgres_server.new_database())
    runners = [faults.start(cwd, "--aqven-holdout", "--aqven-concurrency", "4", env={"AQVEN_STORE": url})
               for cwd in (a, b)]
    for cwd, proc in zip((a, b), runners):     # both hold attempts in flight at once
        faults.wait_until(lambda cwd=cwd: len(faults.calls(cwd / "proj")) >= 2, proc, what="both runners calling")
    for cwd in (a, b):
        (cwd / "proj" / "go").touch()
    outs = [proc.communicate(timeout=300)[0] for proc in runners]
    assert [proc.returncode for proc in runners] == [0, 0], outs

    calls = faults.calls(a / "proj") + faults.calls(b / "proj")
    assert faults.calls(a / "proj") and faults.calls(b / "proj")        # both did part of the work
    assert len(calls) == len(set(calls)) == len(faults.calls(one / "proj"))
    spent = rows(url, "SELECT SUM(spend_usd), COUNT(*) FROM aqven_spend")[0]
    assert spent[0] == pytest.approx(0.001 * len(calls)) and spent[1] == len(calls)
    assert rows(url, "SELECT COUNT(*) FROM aqven_findings") == [(1,)]
    found = [faults.finding_files(cwd / "proj") for cwd in (a, b)]
    assert len(found[0]) == 1 and [p.name for p in found[1]] == [found[0][0].name]
    assert found[0][0].read_text() == found[1][0].read_text()
    assert verdicts(outs[0]) == verdicts(outs[1]) == verdicts(alone.stdout) != []
    print(f"\ntwo runners, one database: {len(faults.calls(a / 'proj'))} + {len(faults.calls(b / 'proj'))} calls "
          f"(one run alone: {len(faults.calls(one / 'proj'))}), spent ${spent[0]:.4f} of the $1.00 cap, 1 finding; "
          f"verdict: {verdicts(alone.stdout)[0]}")

    rebuilt = faults.aqven(fresh, "findings", "rebuild", "--project", "proj", env={**os.environ, "AQVEN_STORE": url})
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr     # a checkout that ran nothing gets the file
    assert [p.read_text() for p in faults.finding_files(fresh / "proj")] == [found[0][0].read_text()]
    assert (fresh / "proj" / "FINDINGS.md").read_text() == (a / "proj" / "FINDINGS.md").read_text()


@pytest.mark.slow
def test_a_checkout_that_concludes_an_experiment_while_another_is_past_its_collection(tmp_path, postgres_url):
    """CI shards on one store: checkout A collects both experiments (nothing spent yet) and waits, checkout B
    concludes rate_b. A's held-out series of rate_b finds its cases taken as it opens: it runs nothing and
    reports B's finding; each held-out attempt is paid once and `aqven findings rebuild` publishes one finding
    per experiment."""
    a, b, fresh = copies(tmp_path, 3, cases=24, experiments=("rate_a", "rate_b"),
                         files={"conftest.py": faults.HOLD_AFTER_COLLECTION})
    env = {"AQVEN_STORE": postgres_url}
    first = faults.start(a, "--aqven-holdout", env={**env, "FAULT_HOLD_AFTER_COLLECTION": "1"})
    try:
        faults.wait_until(lambda: faults.collected(a / "proj") == 1, first, what="checkout A collected")
        second = faults.run(b, "--aqven-holdout", "-k", "rate_b", "--aqven-concurrency", "8", env=env)
    finally:
        (a / "proj" / "go-on").touch()
    out = first.communicate(timeout=300)[0]
    assert second.returncode == 0 and first.returncode == 0, out
    planned = faults.attempts_planned(a / "proj")
    calls = faults.calls(a / "proj") + faults.calls(b / "proj")
    assert len(calls) == len(set(calls)) == planned
    assert {c.split("|")[0] for c in faults.calls(b / "proj")} == {"rate_b"}
    assert rows(postgres_url, "SELECT experiment_id, COUNT(*) FROM aqven_series GROUP BY experiment_id "
                              "ORDER BY experiment_id") == [("rate_a", 1), ("rate_b", 1)]
    assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_findings") == [(2,)]
    assert "rate_b (holdout, nothing ran): confirmed" in out and "held-out cases spent: finding " in out

    rebuilt = faults.aqven(fresh, "findings", "rebuild", "--project", "proj", env={**os.environ, **env})
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert len(faults.finding_files(fresh / "proj")) == 2
    assert "holdout looks" not in (fresh / "proj" / "FINDINGS.md").read_text()


@pytest.mark.slow
def test_a_runner_whose_inputs_differ_closes_the_others_series_as_inputs_changed(tmp_path, postgres_url):
    """Another commit of the dataset on the second machine: its runner starts a series on its own inputs and
    closes the first machine's, invalid (inputs_changed, naming the file), in the transaction that opens its
    own; the first runner starts nothing more in the series it held, as on one machine (SQLite)."""
    a, b = copies(tmp_path, 2, cases=24, gate=2, sleep=0.02)
    faults.add_cases(b / "proj", ["added"])
    env = {"AQVEN_STORE": postgres_url}
    first = faults.start(a, "--aqven-concurrency", "2", env=env)
    faults.wait_until(lambda: len(faults.calls(a / "proj")) >= 2, first, what="the first runner calling")
    (b / "proj" / "go").touch()
    second = faults.run(b, "--aqven-concurrency", "2", env=env)
    (a / "proj" / "go").touch()
    out = first.communicate(timeout=300)[0]
    assert second.returncode == 0, second.stdout
    closed, new = (json.loads(r) | {"status": s} for s, r in rows(postgres_url, "SELECT status, record FROM "
                                                                  "aqven_series ORDER BY created_at"))
    assert closed["status"] == "cancelled" and closed["verdict"]["reason"] == "inputs_changed"
    # another checkout's files: their content hashes, not their paths and times, say what changed
    assert "its inputs changed since it started (dataset)" in closed["verdict"]["text"]
    assert new["status"] == "done" and new["closed"] == [{"series": closed["series_id"],
                                                          "changed": ["dataset"]}]
    assert f"closed series {closed['series_id']}: its inputs changed since it started (dataset)" in second.stdout
    assert "No finding: its inputs changed since it started (dataset)" in out      # the first runner says so
    assert "Traceback" not in out + second.stdout
    assert len(faults.calls(a / "proj")) < faults.attempts_planned(a / "proj", "dev")     # it stopped early


def test_claims_are_judged_by_the_servers_clock_so_a_machine_whose_clock_is_ahead_takes_over_nothing(
        tmp_path, postgres_url, monkeypatch):
    """Two machines, one an hour ahead: its runner finds the other's claim alive (the heartbeat and the look
    are both the server's time), and takes it over only once the lease passed by the server's clock; what it
    stamps (a cancel's time) is the server's too."""
    storage.choose(postgres_url)
    try:
        here = Ledger(Store(tmp_path / "a"))
        sid, _ = here.store.open_series(plan_key="k", experiment_id="e", flow_id="f", dataset_id="d", split="dev",
                                        question="q", record={})
        assert here.try_start(sid, "v", "c", 1).kind == "start"
        monkeypatch.setattr(time, "time", lambda real=time.time: real() + 3600)     # this process: the machine ahead
        ahead = Ledger(Store(tmp_path / "b"))
        waits = ahead.try_start(sid, "v", "c", 1)
        assert (waits.kind, waits.why) == ("wait", ledger.CLAIMED_ELSEWHERE)
        rows(postgres_url, f"UPDATE aqven_runners SET heartbeat_at = heartbeat_at - {LEASE_SECONDS + 1} "
                           f"WHERE runner_id = '{here.runner_id}' RETURNING 1")
        assert ahead.try_start(sid, "v", "c", 1).kind == "start"       # the lease passed, by the server's clock
        assert ledger.cancel(ahead.store, sid, "a test")
        (skew,), = rows(postgres_url, f"SELECT finished_at - extract(epoch FROM clock_timestamp()) FROM aqven_series "
                                      f"WHERE series_id = '{sid}'")
        assert -60 < skew <= 0
        for one in (here, ahead):
            one.store.close()
    finally:
        storage.choose(None)


@pytest.mark.slow
def test_four_runners_spend_no_more_than_one_cap_together(tmp_path, postgres_server):
    url = postgres_server.url(postgres_server.new_database())
    machines = copies(tmp_path, 4, cases=80, sleep=0.5, cost=0.01)
    runners = [faults.start(cwd, "--aqven-concurrency", "4", "--aqven-cap", "0.20", env={"AQVEN_STORE": url})
               for cwd in machines]
    outs = [proc.communicate(timeout=300)[0] for proc in runners]
    calls = sum(len(faults.calls(cwd / "proj")) for cwd in machines)
    (spent, entries), = rows(url, "SELECT SUM(spend_usd), COUNT(*) FROM aqven_spend")
    (series,), = rows(url, "SELECT COUNT(*) FROM aqven_series")
    assert series == 1 and entries == calls
    assert 0.9 * 0.20 <= spent <= 0.20 + 1e-9, outs      # paused near the cap, never past it
    assert sum("paused near its cap" in out for out in outs) >= 1
    print(f"\nfour runners, one $0.20 cap: {calls} calls, spent ${spent:.4f}; per runner "
          f"{[len(faults.calls(cwd / 'proj')) for cwd in machines]}")


def elsewhere(cwd: Path, hostname: str, *args: str, env: dict) -> subprocess.Popen:
    """A runner on another machine: its own hostname (a UTS namespace), so its claims hold until the lease."""
    script = f"hostname {hostname} && exec {shlex.join(faults.pytest_cmd(*args))}"
    return subprocess.Popen(["unshare", "--uts", "sh", "-c", script], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})


@pytest.mark.slow
def test_a_runner_killed_on_another_machine_leaves_its_claims_to_the_other_after_the_lease(tmp_path, postgres_server):
    if subprocess.run(["unshare", "--uts", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare --uts is not allowed here (needs root): no second hostname to run on")
    url = postgres_server.url(postgres_server.new_database())
    a, b = copies(tmp_path, 2, cases=48, gate=3, sleep=0.02)
    env = {"AQVEN_STORE": url}
    doomed = elsewhere(a, "machine-a", "--aqven-holdout", "--aqven-concurrency", "4", env=env)
    faults.wait_until(lambda: len(faults.calls(a / "proj")) >= 3 and rows(url, "SELECT COUNT(*) FROM aqven_claims "
                                                                          "WHERE state = 'running'")[0][0] >= 2,
                      doomed, what="the first runner holding claims in flight")
    doomed.kill()           # unshare and sh exec pytest: this pid is the runner itself
    doomed.wait()
    held = rows(url, "SELECT COUNT(*) FROM aqven_claims WHERE state = 'running'")[0][0]
    (b / "proj" / "go").touch()
    started = time.time()
    survivor = faults.start(b, "--aqven-holdout", "--aqven-concurrency", "4", env=env)
    out = survivor.communicate(timeout=LEASE_SECONDS * 4 + 120)[0]
    took = time.time() - started
    assert survivor.returncode == 0, out
    planned = faults.attempts_planned(b / "proj")
    paid_a, paid_b = faults.calls(a / "proj"), faults.calls(b / "proj")
    (entries,), = rows(url, "SELECT COUNT(*) FROM aqven_spend")
    assert rows(url, "SELECT status FROM aqven_series") == [("done",)]
    assert entries == planned and len(set(paid_b)) == len(paid_b)
    assert len(paid_a) + len(paid_b) <= planned + held       # only the killed runner's calls in flight are paid twice
    assert took >= LEASE_SECONDS - 5 and len(faults.finding_files(b / "proj")) == 1
    print(f"\nkill -9 of a runner holding {held} claims: the other finished in {took:.0f} s (lease "
          f"{LEASE_SECONDS:.0f} s); calls {len(paid_a)} + {len(paid_b)} for {planned} attempts, ledger rows {entries}")
    assert "Traceback" not in out


@pytest.mark.slow
def test_a_server_that_goes_away_mid_series_loses_nothing_and_the_run_goes_on_when_it_returns(tmp_path,
                                                                                             postgres_server):
    own = pg.create(postgres_server.bin)        # a server of its own: this test stops it
    try:
        url = own.url(own.new_database())
        cwd, = copies(tmp_path, 1, cases=48, gate=3, sleep=0.02)
        runner = faults.start(cwd, "--aqven-holdout", "--aqven-concurrency", "4", env={"AQVEN_STORE": url})
        faults.wait_until(lambda: len(faults.calls(cwd / "proj")) >= 3, runner, what="attempts in flight")
        own.stop("fast")            # every connection is cut, the socket gone
        (cwd / "proj" / "go").touch()       # the attempts in flight finish while the server is away
        time.sleep(3)
        own.start()
        out = runner.communicate(timeout=300)[0]
        assert runner.returncode == 0, out
        planned = faults.attempts_planned(cwd / "proj")
        paid = faults.calls(cwd / "proj")
        assert len(paid) == len(set(paid)) == planned == rows(url, "SELECT COUNT(*) FROM aqven_spend")[0][0]
        assert len(faults.finding_files(cwd / "proj")) == 1 and "Traceback" not in out
    finally:
        pg.destroy(own)


@pytest.mark.slow
def test_an_xdist_worker_killed_after_reporting_a_record_it_never_committed_on_postgresql(tmp_path, postgres_url):
    """The group commit's window on the PostgreSQL store: the same code path as SQLite's
    (tests/findings/test_faults_holdout.py), so the verdict never rests on a record the server never got."""
    (cwd,) = copies(tmp_path, 1, cases=24, experiments=("rate_a", "rate_b"),
                    files={"conftest.py": faults.KILL_AFTER_REPORT})
    args = ("--aqven-holdout", *XDIST["n2"], "--aqven-concurrency", "2")
    planned = faults.attempts_planned(cwd / "proj")
    killed = faults.run(cwd, *args, env={"AQVEN_STORE": postgres_url, "FAULT_KILL_AFTER_REPORT": "gw0"})
    finished = rows(postgres_url, "SELECT COUNT(*) FROM aqven_series_attempts WHERE state = 'finished'")[0][0]
    assert killed.returncode == 1 and finished < planned, killed.stdout
    assert "not recorded in the project database (xdist worker gw0 went down before committing" in killed.stdout
    assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_findings") == [(1,)]
    paid = len(faults.calls(cwd / "proj"))
    again = faults.run(cwd, *args, env={"AQVEN_STORE": postgres_url})
    assert again.returncode == 0, again.stdout
    assert len(faults.calls(cwd / "proj")) - paid == planned - finished
    assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_spend") == [(planned,)]
    assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_findings") == [(2,)]


@pytest.mark.slow
def test_a_configuration_that_cannot_work_stops_its_series_on_postgresql_and_the_fix_continues_it(tmp_path,
                                                                                                   postgres_url):
    """The stop lives in the shared store: both xdist workers see it, one call is made; after the fix the same
    command continues the series on the server's database and decides it."""
    from ..providers.openai_server import Server
    from ..providers.test_plugin_http import make_files, split_cases
    server = Server().start()
    try:
        make_files(tmp_path / "proj", server, split_cases(6), repeats=2)
        server.broken["m1"] = "404"
        env = {"AQVEN_STORE": postgres_url}
        stopped = faults.run(tmp_path, *XDIST["n2"], env=env)
        assert stopped.returncode == 1, stopped.stdout
        assert re.search(r"SKIPPED \[12\] .*stopped at a permanent error, nothing more is spent: provider local, "
                         r"model m1: HTTP 404\. Fix: ", stopped.stdout), stopped.stdout
        assert len(server.requests) == 1
        assert rows(postgres_url, "SELECT status, record::json->'pause'->>'reason' FROM aqven_series") == \
            [("awaiting_approval", "provider_unusable")]
        assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_series_attempts") == [(0,)]
        del server.broken["m1"]
        fixed = faults.run(tmp_path, *XDIST["n2"], env=env)
        assert fixed.returncode == 0, fixed.stdout
        assert len(server.requests) == 13
        assert rows(postgres_url, "SELECT status FROM aqven_series") == [("done",)]
    finally:
        server.stop()


@pytest.mark.slow
def test_two_runners_of_one_series_stop_together_when_it_is_decided(tmp_path, postgres_url):
    """--aqven-stop-early on two runners: the runner whose look decides pauses the series in the store, and the
    other one starts nothing more either; one finding, on the decided prefix."""
    a, b = copies(tmp_path, 2, cases=200, repeats=2, sleep=0.02)
    runners = [faults.start(cwd, "--aqven-holdout", "--aqven-stop-early", "--aqven-concurrency", "2",
                            env={"AQVEN_STORE": postgres_url}) for cwd in (a, b)]
    outs = [proc.communicate(timeout=300)[0] for proc in runners]
    assert [proc.returncode for proc in runners] == [0, 0], outs
    calls = faults.calls(a / "proj") + faults.calls(b / "proj")
    assert len(calls) == len(set(calls)) and len(calls) < faults.attempts_planned(a / "proj") / 2
    assert rows(postgres_url, "SELECT COUNT(*) FROM aqven_findings") == [(1,)]
    assert all("decided after " in out and "--aqven-stop-early" in out for out in outs), outs
    assert verdicts(outs[0]) == verdicts(outs[1]) != []
