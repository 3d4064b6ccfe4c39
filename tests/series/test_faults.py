"""Fencing, cancel and approve under faults: a finish counts only from the runner that holds the claim (its
generation checked in the finish's transaction), so a runner suspended past the lease discards its results and
says so, and the ledger holds one row per attempt; a cancel that lands at the decision is final; an approve
reports what the database holds and fails when another change won."""
from __future__ import annotations

import signal

import pytest

from pytest_aqven.findings import publish as series_findings
from pytest_aqven.series import ledger as ledgers
from pytest_aqven.series.db import Store

from .. import faults, findings_util

HOLDOUT = "--aqven-holdout"


def open_series(root, cap="1"):
    store = Store(root)
    sid, _ = store.open_series(plan_key="k", experiment_id="e", flow_id="f", dataset_id="d", split="dev",
                               question="threshold", record={"cap_usd": cap, "cases": [], "repeats": 1,
                                                             "variants": ["v"]})
    return store, sid


def attempt(sid, case, cost=0.01, outcome="ok"):
    return {"series_id": sid, "variant": "v", "case": case, "repeat": 1, "cost_usd": cost, "check_cost_usd": 0.0,
            "unpriced_calls": 0, "outcome": outcome, "started_at": 1.0, "finished_at": 2.0}


def expire(store, runner):
    """The runner was suspended past the lease: its heartbeat is old (its pid still lives)."""
    with store.transaction() as db:
        db.raw.execute("UPDATE aqven_runners SET heartbeat_at = 0 WHERE runner_id = ?", (runner.runner_id,))


@pytest.mark.parametrize("order", ["taker first", "suspended first"])
def test_a_finish_from_a_runner_whose_claim_was_taken_is_discarded(tmp_path, order):
    store, sid = open_series(tmp_path)
    suspended, taker = ledgers.Ledger(Store(tmp_path)), ledgers.Ledger(Store(tmp_path))
    first = suspended.try_start(sid, "v", "a", 1)
    assert first.kind == "start" and first.generation > 0
    expire(store, suspended)
    second = taker.try_start(sid, "v", "a", 1)
    assert second.kind == "start" and second.generation > first.generation         # taken over
    finishes = [(taker, second, "taker"), (suspended, first, "suspended")]
    for ledger, decision, outcome in finishes if order == "taker first" else finishes[::-1]:
        ledger.finish_later({**attempt(sid, "a"), "outcome": outcome}, decision.generation)
        ledger.store.flush()
    assert suspended.discarded == [(sid, "v", "a", 1)] and taker.discarded == []
    rows = store.db.raw.execute("SELECT COUNT(*) FROM aqven_spend WHERE series_id = ?", (sid,)).fetchone()[0]
    assert rows == 1 and store.finished_attempt(sid, "v", "a", 1)["outcome"] == "taker"
    assert ledgers.series_spend(store, sid).finished == 1


def test_a_claim_made_ahead_and_taken_meanwhile_never_starts(tmp_path):
    store, sid = open_series(tmp_path)
    mine, other = ledgers.Ledger(Store(tmp_path)), ledgers.Ledger(Store(tmp_path))
    first = mine.try_start(sid, "v", "a", 1)
    mine.finish_later(attempt(sid, "a"), first.generation)
    ahead = mine.batch([("claim", sid, "v", "b", 1)])[0]
    assert ahead.kind == "start" and mine.still_holds(sid, "v", "b", 1, ahead.generation)
    expire(store, mine)
    assert other.try_start(sid, "v", "b", 1).kind == "start"
    assert not mine.still_holds(sid, "v", "b", 1, ahead.generation)
    other.release(sid, "v", "b", 1)                         # released: nobody holds it, mine still does not
    assert not mine.still_holds(sid, "v", "b", 1, ahead.generation)


SHORT_LEASE = faults.SHORT_LEASE


@pytest.mark.slow          # a stopped runner and a 3 s lease: timing, not statistics, but long (CI runs -m slow)
def test_sigstop_past_the_lease_then_sigcont_counts_each_attempt_once(tmp_path, xdist):
    """A runner stopped (Ctrl-Z, a paused CI runner) while it holds calls in flight; a second runner takes its
    claims after the lease and finishes the series; the first, resumed, discards what it finished and says so."""
    root = faults.make(tmp_path, cases=40, gate=6, sleep=0.02, files={"conftest.py": SHORT_LEASE})
    planned = faults.attempts_planned(root)
    first = faults.start(tmp_path, HOLDOUT, "--aqven-concurrency", "4")
    faults.wait_until(lambda: len(faults.calls(root)) >= 6 + 3, first, what="calls held in flight")
    first.send_signal(signal.SIGSTOP)
    try:
        (root / "go").touch()
        second = faults.run(tmp_path, HOLDOUT, *xdist, "--aqven-concurrency", "2")
    finally:
        first.send_signal(signal.SIGCONT)
    out = first.communicate(timeout=300)[0]
    assert second.returncode == 0, second.stdout
    assert first.returncode == 0, out
    assert "discarded: another runner took their claims while this one was suspended past the 3 s lease" in out
    assert faults.ledger_rows(root) == faults.finished(root) == planned      # one row per attempt
    assert len(faults.calls(root)) > planned                                 # the suspended calls were paid twice
    assert len(faults.series(root, "holdout")) == 1 and len(faults.finding_files(root)) == 1
    verdicts = [line for text in (out, second.stdout) for line in text.splitlines() if line.startswith("rate_ok (")]
    assert len(set(verdicts)) == 1, verdicts                                 # both runners say the same


@pytest.mark.slow
def test_a_cancel_while_the_last_attempt_is_in_flight_is_final(tmp_path, xdist):
    root = faults.make(tmp_path, cases=40)
    planned = faults.attempts_planned(root)
    (root / "provider.py").write_text(faults.PROVIDER.format(gate=planned, sleep=0.0, secret=faults.SECRET,
                                                             answer='{"label": "positive"}', cost=0.001, extra=""))
    proc = faults.start(tmp_path, HOLDOUT, *xdist)
    faults.wait_until(lambda: len(faults.calls(root)) >= planned, proc, what="the last call")
    sid = faults.series(root)[0]["series_id"]
    cancel = faults.aqven(tmp_path, "series", "cancel", sid, "--path", "proj")
    assert cancel.returncode == 0, cancel.stderr
    (root / "go").touch()
    out = proc.communicate(timeout=300)[0]
    (s,) = faults.series(root)
    assert s["status"] == "cancelled" and s["verdict"]["reason"] == "cancelled"
    assert faults.finding_files(root) == [] and not (root / "FINDINGS.md").exists()
    assert proc.returncode == 1 and f"rate_ok (holdout, {planned}/{planned} attempts): invalid" in out, out
    assert faults.finished(root) == planned                  # the last attempt was paid and recorded


def test_a_cancel_landing_inside_the_decision_wins(tmp_path, monkeypatch):
    root = findings_util.make_project(tmp_path)
    sid, records = findings_util.held_out(root)
    build = series_findings.document.build

    def cancelled_meanwhile(*args, **kwargs):
        ledgers.cancel(Store(root), sid, "aqven series cancel")       # between the read and the transaction
        return build(*args, **kwargs)
    monkeypatch.setattr(series_findings.document, "build", cancelled_meanwhile)
    conclusion = findings_util.concluded(root, sid, records)
    assert conclusion.state == "invalid" and conclusion.verdict.reason == "cancelled"
    store = Store(root)
    assert store.series(sid)["status"] == "cancelled"
    assert store.db.raw.execute("SELECT COUNT(*) FROM aqven_findings").fetchone()[0] == 0


def paused(tmp_path):
    root = faults.make(tmp_path, cases=40, cost=0.01)
    (root / "aqven.yaml").write_text((root / "aqven.yaml").read_text() + "research:\n  spend_cap_usd: 0.05\n")
    faults.run(tmp_path)
    (s,) = faults.series(root)
    assert s["status"] == "awaiting_approval"
    return root, s["series_id"]


@pytest.mark.slow
def test_an_approve_that_a_cancel_overtook_says_so_and_fails(tmp_path):
    root, sid = paused(tmp_path)
    prompted = faults.approve_prompted(tmp_path, sid, "0.40")
    assert faults.aqven(tmp_path, "series", "cancel", sid, "--path", "proj").returncode == 0
    code, text = faults.confirm(prompted)
    assert code == 1 and not [line for line in text.splitlines() if line.startswith("approved:")], text
    assert "not approved: another change to series" in text and "it is cancelled; a rerun starts a new series" in text
    assert faults.series(root)[0]["status"] == "cancelled"


@pytest.mark.slow
def test_of_two_approvals_the_second_says_which_cap_won_and_fails(tmp_path):
    root, sid = paused(tmp_path)
    first, second = faults.approve_prompted(tmp_path, sid, "0.40"), faults.approve_prompted(tmp_path, sid, "0.08")
    code_a, text_a = faults.confirm(first)
    code_b, text_b = faults.confirm(second)
    assert code_a == 0 and "continues under a cap of $0.40" in text_a
    assert code_b == 1 and "it is running under a cap of $0.40 (approved by" in text_b, text_b
    assert float(faults.series(root)[0]["cap_usd"]) == 0.40
