"""The storage contract: what the series, the ledger, the findings and the provider limits rely on, stated
through `storage.Database`, `Transaction` and `Limits` alone, so every backend of conftest.BACKENDS runs it."""
from __future__ import annotations

import json
import threading
import time

import pytest

from pytest_aqven import storage


def new_series(db, series_id, *, experiment="e", split="dev", status="running", plan_key="k", created_at=1.0,
               record=None):
    db.insert_series(series_id, experiment, "f", "d", split, "threshold", status, plan_key, created_at,
                     {"cap_usd": "1", **(record or {})})


def row(series_id, variant, case, repeat, *, outcome="ok", finished_at=2.0, **extra):
    aid = f"{series_id}|{variant}|{case}|{repeat}"
    record = {"series_id": series_id, "variant": variant, "case": case, "repeat": repeat, "outcome": outcome, **extra}
    return (aid, series_id, variant, case, repeat, outcome, "0.5", "0.0", 1.0, finished_at, json.dumps(record))


# --- transactions ------------------------------------------------------------------------------------------

def test_a_transaction_commits_as_a_whole_or_not_at_all(database):
    with pytest.raises(RuntimeError):
        with database.transaction() as db:
            new_series(db, "s1")
            raise RuntimeError("the caller failed midway")
    with database.read() as db:
        assert db.series("s1") is None
    with database.transaction() as db:
        new_series(db, "s1")
    with database.read() as db:
        assert db.series_status("s1") == "running"


def test_what_one_connection_commits_the_others_see(backend, database):
    other = backend.open()
    try:
        with database.transaction() as db:
            new_series(db, "s1")
        with other.read() as db:
            assert db.series_status("s1") == "running"
    finally:
        other.close()


def test_writers_on_many_connections_take_turns_so_claim_generations_never_repeat(backend, database):
    with database.transaction() as db:
        new_series(db, "s")
    generations: list[int] = []

    def runner(n: int) -> None:
        conn = backend.open()
        try:
            for i in range(15):
                with conn.transaction() as db:
                    generations.append(db.claim(f"a{n}-{i}", "s", f"r{n}", time.time(), 1.0))
        finally:
            conn.close()
    threads = [threading.Thread(target=runner, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(generations) == list(range(1, 61))


def test_a_peek_creates_nothing_and_reads_what_is_committed(backend):
    with backend.peek() as db:
        assert db is None
    with backend.peek() as db:
        assert db is None           # still none: looking made no database
    database = backend.open()
    try:
        with database.transaction() as db:
            new_series(db, "s1")
    finally:
        database.close()
    with backend.peek() as db:
        assert db is not None and db.series_question("s1") == "threshold"


# --- series --------------------------------------------------------------------------------------------

def test_a_series_reads_back_as_written_and_ids_come_newest_first(database):
    with database.transaction() as db:
        new_series(db, "ab1", created_at=1.0, record={"cases": ["x"]})
        new_series(db, "ab2", created_at=3.0)
        new_series(db, "cd3", created_at=2.0)
    with database.read() as db:
        assert db.series("ab1") == ("running", {"cap_usd": "1", "cases": ["x"]}, 1.0, None)
        assert db.series("nope") is None and db.series_status("nope") is None
        assert tuple(db.series_cap("ab1")) == ("running", "1")
        assert db.series_ids() == ["ab2", "cd3", "ab1"]
        assert db.series_ids("ab") == ["ab2", "ab1"]


def test_open_series_of_a_plan_key_are_found_newest_first_and_a_cancel_lands_once(database):
    with database.transaction() as db:
        new_series(db, "old", created_at=1.0, record={"run_token": "t1"})
        new_series(db, "new", created_at=2.0, status="awaiting_approval")
        new_series(db, "done", created_at=3.0, status="done")
        new_series(db, "other", plan_key="k2")
        assert [tuple(r) for r in db.open_series_by_key("k")] == [("new", None), ("old", "t1")]
        verdict = {"state": "invalid", "reason": "cancelled", "text": "No finding."}
        assert db.cancel_series("old", verdict, 9.0) is True
        assert db.cancel_series("old", verdict, 10.0) is False       # cancelled already
        assert db.cancel_series("done", verdict, 10.0) is False      # decided: never cancelled
        status, record, _, finished_at = db.series("old")
        assert (status, record["verdict"], finished_at) == ("cancelled", verdict, 9.0)
        assert [tuple(r) for r in db.open_series_by_key("k")] == [("new", None)]


def test_runs_are_named_once_and_a_run_joins_its_series_of_the_same_scope(database):
    with database.transaction() as db:
        new_series(db, "s1", plan_key="k1", record={"scope_key": "scope"})
        db.add_run("s1", "run-a")
        db.add_run("s1", "run-a")
        db.add_run("s1", "run-b")
        assert db.series_runs("s1") == ["run-a", "run-b"]
        assert db.series_runs("nope") == []
        assert db.open_series_joined("scope", "k2", "run-a") == "s1"
        assert db.open_series_joined("scope", "k1", "run-a") is None      # its own plan key: not a join
        assert db.open_series_joined("scope", "k2", "run-c") is None      # another run
        assert db.open_series_joined("other", "k2", "run-a") is None


def test_the_other_open_series_of_an_experiment_come_with_their_snapshots(database):
    with database.transaction() as db:
        new_series(db, "keep", record={"snapshot": {"a_sha256": "1"}})
        new_series(db, "open", record={"snapshot": {"a_sha256": "2"}, "fingerprints": {"x.yaml": [1, 2]}})
        new_series(db, "bare")
        new_series(db, "closed", status="cancelled")
        new_series(db, "holdout", split="holdout")
        found = sorted(tuple(r) for r in db.open_series_of("e", "dev", "keep"))
        assert found == [("bare", {}, {}), ("open", {"a_sha256": "2"}, {"x.yaml": [1, 2]})]
        db.set_closed("keep", [{"series": "open", "changed": ["x.yaml"]}])
        assert db.series("keep")[1]["closed"] == [{"series": "open", "changed": ["x.yaml"]}]


def test_a_pause_waits_for_one_approval_and_a_cap_applies(database):
    with database.transaction() as db:
        new_series(db, "s")
        db.pause_series("s", {"reason": "spend_near_cap", "spent_usd": 0.9})
        status, record, _, _ = db.series("s")
        assert status == "awaiting_approval" and record["needs_approval"] is True
        assert record["pause"] == {"reason": "spend_near_cap", "spent_usd": 0.9}
        assert db.approve_series("s", "2", "ana", 5.0) is True
        assert db.approve_series("s", "3", "bob", 6.0) is False        # the first approval won
        assert tuple(db.approval("s")) == ("running", "2", "ana")
        record = db.series("s")[1]
        assert "pause" not in record and record["needs_approval"] is False and record["approved_at"] == 5.0
        db.set_cap("s", "awaiting_approval", "5", "--aqven-cap", True, {"reason": "cap_above_project"})
        status, record, _, _ = db.series("s")
        assert (status, record["cap_usd"], record["cap_from"], record["needs_approval"], record["pause"]) == \
            ("awaiting_approval", "5", "--aqven-cap", True, {"reason": "cap_above_project"})
        db.set_cap("s", "running", "4", None, False, None)
        status, record, _, _ = db.series("s")
        assert (status, record["cap_usd"], record["needs_approval"], record["pause"]) == ("running", "4", False, None)


def test_a_stopped_series_resumes_once_without_an_approval(database):
    with database.transaction() as db:
        new_series(db, "s", record={"approved_by": "ana"})
        assert db.resume_series("s") is False                          # running: nothing to resume
        db.pause_series("s", {"reason": "provider_unusable", "provider": "local", "model": "m1", "run": "r1"})
        assert db.series("s")[1]["pause"]["reason"] == "provider_unusable"
        assert db.resume_series("s") is True
        assert db.resume_series("s") is False                          # the first resume won
        status, record, _, _ = db.series("s")
        assert (status, record["needs_approval"], record["approved_by"]) == ("running", False, "ana")
        assert "pause" not in record


def test_a_finished_series_keeps_its_first_finish_time(database):
    with database.transaction() as db:
        new_series(db, "s")
        db.finish_series("s", "done", {"verdict": {"state": "signal"}}, 7.0)
        db.finish_series("s", "done", {"verdict": {"state": "signal"}, "again": 1}, 8.0)
        assert db.series("s") == ("done", {"verdict": {"state": "signal"}, "again": 1}, 1.0, 7.0)


# --- attempts ----------------------------------------------------------------------------------------------

def test_attempts_are_saved_once_per_id_and_read_by_case_variant_repeat_and_finish(database):
    with database.transaction() as db:
        new_series(db, "s")
        db.save_attempts([row("s", "v1", "a", 1, finished_at=3.0), row("s", "v1", "a", 2, finished_at=1.0,
                                                                       outcome="check_failed"),
                          row("s", "v2", "a", 1, finished_at=2.0), row("s", "v1", "b", 1, outcome="error",
                                                                       finished_at=2.5)])
        db.save_attempts([row("s", "v1", "b", 1, outcome="ok", finished_at=2.5, again=True)])   # the same: replaced
    with database.read() as db:
        assert db.count_finished("s") == 4
        assert db.finished_attempt("s|v1|b|1") == {"series_id": "s", "variant": "v1", "case": "b", "repeat": 1,
                                                   "outcome": "ok", "again": True}
        assert db.finished_attempt("s|v9|b|1") is None
        assert sorted(r["repeat"] for r in db.finished_attempts("s", case="a", variant="v1")) == [1, 2]
        assert [r["variant"] for r in db.finished_attempts("s", case="a", repeat=1, by_finish=True)] == ["v2", "v1"]
        assert [(r["case"], r["repeat"]) for r in db.finished_attempts("s", by_finish=True)] == \
            [("a", 2), ("a", 1), ("b", 1), ("a", 1)]
        assert [tuple(r) for r in db.outcome_counts("s")] == [("ok", 3), ("check_failed", 1)]


def test_history_is_the_latest_decided_series_at_most_limit_per_variant_by_case_and_repeat(database):
    with database.transaction() as db:
        new_series(db, "early", status="done")
        new_series(db, "late", status="failed")
        new_series(db, "open")
        db.finish_series("early", "done", {}, 10.0)
        db.finish_series("late", "failed", {}, 20.0)
        db.save_attempts([row("early", "v", "a", 1), row("open", "v", "a", 1)]
                         + [row("late", v, c, r) for v in ("x", "y") for c in ("b", "a") for r in (2, 1)])
        assert [(r["variant"], r["case"], r["repeat"]) for r in db.history("e", 3)] == \
            [("x", "a", 1), ("x", "a", 2), ("x", "b", 1), ("y", "a", 1), ("y", "a", 2), ("y", "b", 1)]
        assert db.history("unknown", 3) == []


# --- ledger ------------------------------------------------------------------------------------------------

def test_runners_beat_and_leave_with_their_running_claims(database):
    with database.transaction() as db:
        new_series(db, "s")
        db.add_runner("r1", "host", 123, 1.0)
        db.beat("r1", 5.0)
        assert tuple(db.runner("r1")) == ("host", 123, 5.0)
        db.claim("a1", "s", "r1", 1.0, 0.5)
        db.claim("a2", "s", "r2", 1.0, 0.5)
        db.drop_runner("r1")
        assert db.runner("r1") is None
        assert db.attempt_claim("a1") == (False, None) and db.attempt_claim("a2") == (False, "r2")


def test_a_claim_is_fenced_by_its_runner_and_generation(database):
    with database.transaction() as db:
        new_series(db, "s")
        first = db.claim("a", "s", "r1", 1.0, 0.8)
        assert tuple(db.claim_standing("s", "a", "r1")) == ("running", first)
        assert tuple(db.claim_standing("s", "a", "r2")) == ("running", None)
        assert db.claim_standing("nope", "a", "r1") is None
        db.release_claim("a", "r2")                      # not its claim: nothing happens
        assert db.attempt_claim("a") == (False, "r1")
        db.drop_claim("a")                               # its runner died: anyone may take it
        second = db.claim("a", "s", "r2", 2.0, 0.8)
        assert second > first and tuple(db.claim_standing("s", "a", "r1")) == ("running", None)
        # a finish is fenced: not by the runner whose claim was taken, nor under another generation
        assert not db.record_finish("s", "a", "r1", 0.5, 0, "ok", 3.0, row("s", "a", "c", 1), first)
        assert not db.record_finish("s", "a", "r2", 0.5, 0, "ok", 3.0, row("s", "a", "c", 1), first)
        assert db.spend_totals("s") is None and db.count_finished("s") == 0
        assert tuple(db.claim_standing("s", "a", "r2")) == ("running", second)
        db.release_claim("a", "r2")
        assert db.attempt_claim("a") == (False, None)


def test_a_finish_records_the_spend_marks_the_claim_and_saves_the_attempt_and_the_totals_follow(database):
    with database.transaction() as db:
        new_series(db, "s")
        assert db.spend_totals("s") is None
        for n, (cost, unpriced) in enumerate([(0.25, 0), (0.5, 2), (0.125, 0)]):
            generation = db.claim(f"s|v|c{n}|1", "s", "r1", 1.0, 1.0)
            db.claim(f"s|v|d{n}|1", "s", "r2", 1.0, 1.0)
            assert db.record_finish("s", f"s|v|c{n}|1", "r1", cost, unpriced, "ok", 3.0, row("s", "v", f"c{n}", 1),
                                    generation)
            assert tuple(db.claim_standing("s", f"s|v|c{n}|1", "r1")) == ("running", None)   # finished: not running
            assert not db.record_finish("s", f"s|v|c{n}|1", "r1", cost, unpriced, "ok", 3.0,
                                        row("s", "v", f"c{n}", 1), generation)              # and only once
        assert tuple(db.spend_totals("s")) == (pytest.approx(0.875), 0.5, 3, 1)
        assert sorted(tuple(r) for r in db.running_claims("s")) == [("r2", 3)]
        assert db.attempt_claim("s|v|c1|1") == (True, "r1")
        assert db.count_finished("s") == 3


# --- findings ----------------------------------------------------------------------------------------------

def test_a_finding_is_recorded_with_its_series_plan_key_and_published_once(database):
    with database.transaction() as db:
        db.ensure_findings()
        db.ensure_findings()
        new_series(db, "h1", split="holdout", plan_key="p1", created_at=1.0, record={"cases": ["a"]})
        new_series(db, "h2", split="holdout", plan_key="p1", created_at=2.0, status="done")
        new_series(db, "other", experiment="f", split="holdout")
        assert db.finding("h1") is None
        db.insert_finding("h1", "e", "finding one", 1.0)
        db.insert_finding("h2", "e", "finding two", 2.0)
        assert db.finding("h1") == "finding one"
        assert [tuple(r) for r in db.findings()] == [("h1", "e", "finding one"), ("h2", "e", "finding two")]
        assert sorted(tuple(r) for r in db.held_out_findings("e")) == \
            [("h1", {"cap_usd": "1", "cases": ["a"]}, "finding one"), ("h2", {"cap_usd": "1"}, "finding two")]
        assert db.has_open_held_out("e") and db.has_open_held_out("f") and not db.has_open_held_out("g")
        assert db.unpublished_finding("p1") == "h2"
        db.mark_published(["h2"], 3.0)
        assert db.unpublished_finding("p1") == "h1"
        db.mark_published(["h1"], 4.0)
        assert db.unpublished_finding("p1") is None
        assert db.findings_md_shas() == set()
        db.add_findings_md("sha", 1.0)
        db.add_findings_md("sha", 2.0)
        assert db.findings_md_shas() == {"sha"}


def test_findings_written_by_one_connection_are_read_by_a_peek(backend, database):
    with database.transaction() as db:
        db.ensure_findings()
        new_series(db, "h", split="holdout")
        db.insert_finding("h", "e", "text", 1.0)
    with backend.peek() as db:
        assert [tuple(r) for r in db.findings()] == [("h", "e", "text")]


# --- limits ------------------------------------------------------------------------------------------------

def test_pacing_slots_are_spaced_per_provider_across_connections(backend):
    one, two = backend.limits(), backend.limits()
    starts = [(one if i % 2 else two).reserve("p", 10.0) for i in range(4)]
    # PostgreSQL keeps the slots by the server's clock and answers on this machine's: a round trip's jitter
    assert [b - a for a, b in zip(starts, starts[1:])] == [pytest.approx(10.0, abs=0.1)] * 3
    assert backend.limits().reserve("q", 10.0) < starts[-1]


def test_leases_are_capped_per_scope_expire_and_are_released(backend):
    one, two = backend.limits(), backend.limits()
    first = one.try_lease("p:m", 2, 60.0)
    second = two.try_lease("p:m", 2, 60.0)
    assert first and second and first != second
    assert one.try_lease("p:m", 2, 60.0) is None
    assert one.try_lease("p:other", 2, 60.0) is not None
    two.release(second)
    assert one.try_lease("p:m", 2, 60.0) is not None
    short = backend.limits().try_lease("q:m", 1, 0.2)
    assert short and two.try_lease("q:m", 1, 60.0) is None
    time.sleep(0.3)
    assert two.try_lease("q:m", 1, 60.0) is not None           # a dead holder's lease expired


def test_a_failing_database_raises_one_of_the_errors_callers_survive(backend):
    database = backend.open()
    database.close()
    with pytest.raises(storage.ERRORS):
        with database.read() as db:
            db.series("s")
