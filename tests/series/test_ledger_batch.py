"""The ledger's batched transactions: the claims of many attempts in flight go in one transaction, after the
finishes deferred meanwhile, decided exactly as one by one; an attempt's spend, claim and record commit together."""
from __future__ import annotations

import asyncio
import sqlite3

import pytest

from pytest_aqven.engine import llm
from pytest_aqven.series import ledger as ledgers
from pytest_aqven.series.db import Store
from pytest_aqven.series.scheduler import Scheduler

from .. import faults


def open_series(root, cap: str = "0.10") -> tuple[Store, str]:
    store = Store(root)
    sid, _ = store.open_series(plan_key="k", experiment_id="e", flow_id="f", dataset_id="d", split="dev",
                               question="threshold", record={"cap_usd": cap, "cases": [], "repeats": 1,
                                                             "variants": []})
    return store, sid


def finish(ledger, record: dict) -> None:
    """The attempt's finish, under the claim its runner holds (as the scheduler finishes it)."""
    ledger.finish_later(record, faults.held(ledger, record))


def record(sid: str, case: str, cost: float) -> dict:
    return {"series_id": sid, "variant": "v", "case": case, "repeat": 1, "cost_usd": cost, "check_cost_usd": 0.0,
            "unpriced_calls": 0, "outcome": "ok", "passed": True, "started_at": 1.0, "finished_at": 2.0}


def committed(root, sid: str) -> tuple[list[str], list[str]]:
    """What another process sees: the finished claims and the finished attempt rows."""
    conn = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    try:
        claims = [r[0] for r in conn.execute("SELECT attempt_id FROM aqven_claims WHERE series_id = ? "
                                             "AND state = 'finished' ORDER BY attempt_id", (sid,))]
        rows = [r[0] for r in conn.execute("SELECT attempt_id FROM aqven_series_attempts WHERE series_id = ? "
                                           "AND state = 'finished' ORDER BY attempt_id", (sid,))]
        return claims, rows
    finally:
        conn.close()


def test_a_batch_decides_as_one_by_one_after_the_deferred_finishes_and_commits_claim_and_record_together(tmp_path):
    store, sid = open_series(tmp_path, cap="0.10")
    ledger = ledgers.Ledger(store)
    (first,) = ledger.batch([("start", sid, "v", "a", 1)])
    assert first.kind == "start" and first.limit_usd == pytest.approx(0.10)
    finish(ledger, record(sid, "a", 0.02))
    assert committed(tmp_path, sid) == ([], [])                     # deferred: nothing written yet
    # a's finish goes first in the batch's transaction: b then sees the reserve 0.02, not "the first runs alone"
    out = ledger.batch([("start", sid, "v", c, 1) for c in "bcdef"])
    assert [d.kind for d in out] == ["start", "start", "start", "start", "wait"]
    assert out[1].limit_usd == pytest.approx(0.10 - 0.04)          # as test_series' one-by-one decisions
    claims, rows = committed(tmp_path, sid)
    assert claims == rows and len(rows) == 1                        # a: claim finished with its record
    assert ledger.try_start(sid, "v", "a", 1).kind == "reused"


def test_an_operation_that_fails_gets_its_error_and_the_others_still_commit(tmp_path):
    store, sid = open_series(tmp_path, cap="1")
    ledger = ledgers.Ledger(store)
    ledger.try_start(sid, "v", "first", 1)
    finish(ledger, record(sid, "first", 0.01))                 # a reserve: claims need not wait
    assert ledger.try_start(sid, "v", "a", 1).kind == "start"
    broken = {**record(sid, "a", 0.01), "finished_at": object()}    # cannot be written: refused at once
    with pytest.raises(TypeError):
        ledger.finish_later(broken, faults.held(ledger, broken))
    out = ledger.batch([("start", sid, "v", "b", 1), ("unknown",)])
    assert out[0].kind == "start" and isinstance(out[1], ValueError)
    assert len(committed(tmp_path, sid)[1]) == 1                    # a's spend did not enter without its record
    assert ledgers.series_spend(store, sid).running == 2             # a still claimed, b claimed once


def test_the_scheduler_batches_the_claims_of_attempts_in_flight(tmp_path, monkeypatch):
    store, sid = open_series(tmp_path, cap="1")
    ledger = ledgers.Ledger(store)
    ledger.try_start(sid, "v", "first", 1)
    finish(ledger, record(sid, "first", 0.01))                 # a reserve: claims need not wait
    store.flush()
    batches: list[int] = []
    batch = ledgers.Ledger.batch
    monkeypatch.setattr(ledgers.Ledger, "batch", lambda self, ops: batches.append(len(ops)) or batch(self, ops))
    sched = Scheduler(concurrency=32)
    try:
        async def many():
            return await asyncio.gather(*(sched.database.op(tmp_path, "start", sid, "v", f"c{i}", 1)
                                          for i in range(40)))
        decisions = asyncio.run_coroutine_threadsafe(many(), sched.loop).result(timeout=60)
        assert [d.kind for d in decisions] == ["start"] * 40
        assert sum(batches) == 40 and len(batches) < 40             # several claims per transaction
        with pytest.raises(ValueError):                             # an operation's error reaches its caller
            asyncio.run_coroutine_threadsafe(sched.database.op(tmp_path, "unknown"), sched.loop).result(timeout=60)
        # from another event loop (an attempt run in the pytest thread): one operation, answered on that loop
        assert asyncio.run(sched.database.op(tmp_path, "start", sid, "v", "other", 1)).kind == "start"
    finally:
        sched.close()
    assert ledgers.series_spend(store, sid).running == 0             # the runner's claims went with it


def test_an_output_schema_is_built_once_per_model(monkeypatch):
    from pydantic import BaseModel

    class Out(BaseModel):
        label: str

    built = []
    original = Out.model_json_schema
    monkeypatch.setattr(Out, "model_json_schema", classmethod(lambda cls: built.append(cls) or original()))
    first, second = llm.output_schema(Out), llm.output_schema(Out)
    assert first is second and first["properties"]["label"]["type"] == "string" and len(built) == 1


def test_a_pause_decided_in_a_batch_holds_for_the_claims_after_it(tmp_path):
    store, sid = open_series(tmp_path, cap="0.10")
    ledger = ledgers.Ledger(store)
    assert ledger.try_start(sid, "v", "a", 1).kind == "start"
    finish(ledger, record(sid, "a", 0.095))
    out = ledger.batch([("start", sid, "v", "b", 1), ("start", sid, "v", "c", 1)])
    assert [d.kind for d in out] == ["paused", "paused"] and store.series(sid)["status"] == "awaiting_approval"
    assert ledgers.series_spend(store, sid).running == 0


def test_the_look_ahead_schedules_each_attempt_about_once_whatever_the_concurrency(pytester, monkeypatch):
    from pytest_aqven.series import scheduler

    from .test_series import make
    make(pytester.path, cases=80)                                   # 40 working cases, one repeat
    submits, handovers = [], []
    submit, submit_many = scheduler.Scheduler.submit, scheduler.Scheduler.submit_many
    monkeypatch.setattr(scheduler.Scheduler, "submit", lambda self, *a: submits.append(a) or submit(self, *a))
    monkeypatch.setattr(scheduler.Scheduler, "submit_many",
                        lambda self, batch: handovers.append(batch) or submit_many(self, batch))
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "16")
    result.assert_outcomes(passed=41)
    # each attempt is handed to the scheduler once by the window and once by its own item, not the 34 of the
    # window at every item; the window moves in steps of about 17 items, one wake-up of the loop each
    handed = [(a[1], a[2].name, a[3]) for batch in handovers for a in batch]
    assert len(set(handed)) == 40 and len(handed) <= 40 + 34
    assert len({(a[1], a[2].name, a[3]) for a in submits}) == 40 and len(submits) <= 40
    assert 1 < len([b for b in handovers if b]) <= 40 // 17 + 2


@pytest.mark.slow
def test_attempts_queued_behind_the_first_one_wait_for_its_end_without_asking_the_ledger_meanwhile(pytester,
                                                                                                    monkeypatch):
    from .test_series import make
    make(pytester.path, cases=80, sleep=0.5)                        # 40 working cases; each call takes 0.5 s
    starts = []
    batch = ledgers.Ledger.batch
    monkeypatch.setattr(ledgers.Ledger, "batch",
                        lambda self, ops: starts.extend(op for op in ops if op[0] == "start") or batch(self, ops))
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "16")
    result.assert_outcomes(passed=41)
    # the first attempt runs alone for 0.5 s: each job queued behind it asks once, then once it ended (asking
    # every 50 ms meanwhile made about 10 decisions a job)
    assert len(starts) <= 2 * 40
