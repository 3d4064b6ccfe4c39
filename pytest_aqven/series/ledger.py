"""The spend ledger and attempt claims, shared through the project database by every process of a run.

The ledger is the one authority on whether an attempt may start. Each decision is one write transaction
of the store (SQLite: BEGIN IMMEDIATE), so xdist workers and a second pytest on the same project see the same spend and claims:
- an attempt already finished is reused; one claimed by a live runner is waited for (never run twice);
- a claim of a runner that died (its process is gone, or its heartbeat is older than the lease) is taken over;
- the first attempt of a series runs alone; its cost becomes the reserve (the most a finished attempt cost);
- a new attempt starts only while spent + reserve x running < 90% of the cap; when nothing runs and that
  still blocks, the series waits in awaiting_approval (pause.reason spend_near_cap);
- each attempt gets a hard limit: cap - (spent + reserve x running) at its start.

An attempt is finished in one step: its spend, its claim marked finished and its record, so a claim never
shows finished without its record. Finishes are group-committed (`finish_later`): they join the next
transaction of the process's store (a claim's, usually), or a timer commits them within 100 ms; meanwhile
the claim still counts its reserve, which only makes the decisions more careful. The claims queued while
the previous transaction ran go in one transaction (`Ledger.batch`), after the finishes, each decided
exactly as alone and in order, so the cap arithmetic is the same. A process running one attempt at a time
claims ahead: with its attempt's claim, the claims of its next ones ("claim", decided exactly as a start,
counting as running until they start or the runner closes); a claim made ahead starts only while the series
is still running (`still_running`: a pause or a cancel holds for it too). So most attempts need no
transaction of their own. A kill -9 loses the finishes not yet committed (the last batch): their claims die
with the runner and they are rerun, never counted twice (the attempt id is the key); what their calls cost
is not in the ledger, as for an attempt killed mid-call.

Fencing: every claim gets a generation number (one counter for the database); a finish is accepted only
while its runner still holds the claim of that generation, checked in the finish's own transaction. A
runner suspended past the lease (Ctrl-Z, a paused CI runner) finds its claims taken: its results are
discarded (no spend row, no record), so the ledger holds exactly one row per attempt.
"""
from __future__ import annotations

import dataclasses
import os
import socket
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from .. import storage
from ..codes import LedgerKind
from ..storage import Transaction
from .cap import NEAR, SeriesCap, approved_cap_holds, dollars
from .db import Store, attempt_id, attempt_row, known_series, planned_attempts
from .stopping import decided_text, stop_of

LEASE_SECONDS = 30.0      # a runner whose heartbeat is older than this is dead
CLAIMED_ELSEWHERE = "claimed by another runner"
FIRST_ALONE = "the first attempt runs alone; its cost becomes the reserve"
PROVIDER_UNUSABLE = "provider_unusable"     # the pause of a series stopped at a permanent provider error
HOST = socket.gethostname()


@dataclass(frozen=True)
class Decision:
    kind: LedgerKind
    limit_usd: float | None = None   # start: the attempt's hard spend limit
    why: str = ""                    # wait/paused/stopped: for a person
    generation: int = 0              # start: the claim's generation, which its finish must still hold


@dataclass(frozen=True)
class Spend:
    spent_usd: float
    reserve_usd: float
    finished: int
    unpriced_attempts: int
    running: int = 0

    def text(self, cap_usd: float | Decimal | None = None) -> str:
        amount = f"${self.spent_usd:.4f}"
        if self.unpriced_attempts:
            amount = (f"at least {amount} ({self.unpriced_attempts} attempt"
                      f"{'s' if self.unpriced_attempts != 1 else ''} on a model without a known price)")
        return amount + (f" of its {dollars(cap_usd)} cap" if cap_usd is not None else "")


def _alive(db: Transaction, runner_id: str, me: str, now: float, seen: dict | None = None) -> bool:
    """Whether a runner holds its claims; `seen` keeps the answers of one transaction (one look per runner)."""
    if runner_id == me:
        return True
    if seen is not None:
        if runner_id not in seen:
            seen[runner_id] = _alive(db, runner_id, me, now)
        return seen[runner_id]
    row = db.runner(runner_id)
    if row is None:
        return False
    host, pid, beat = row
    if now - beat > LEASE_SECONDS:
        return False
    return host != HOST or not _gone(pid)


def _gone(pid: int) -> bool:
    """The process ended: it is gone, or a zombie (killed, not yet reaped: an xdist worker's parent reaps it
    only later, and its claims would otherwise wait for the lease)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] == b"Z"
    except (OSError, IndexError):       # no /proc (not Linux): a live pid
        return False


def spend(db: Transaction, series_id: str, me: str = "", now: float | None = None, seen: dict | None = None) -> Spend:
    """The running total (one row, kept by a trigger on aqven_spend) and the attempts running now."""
    row = db.spend_totals(series_id)
    spent, reserve, finished, unpriced = row or (0.0, 0.0, 0, 0)
    now = db.now() if now is None else now
    running = sum(n for runner, n in db.running_claims(series_id) if _alive(db, runner, me, now, seen))
    return Spend(spent, reserve, finished, unpriced, running)


def _record(db: Transaction, series_id: str) -> dict:
    return known_series(db, series_id)[1]


def halt_text(series_id: str, halt: dict) -> str:
    """The one line of a series stopped at a permanent provider error (its pause `halt`)."""
    return (f"series {series_id} stopped at a permanent error, nothing more is spent: provider {halt['provider']}, "
            f"model {halt['model']}: {halt['error']}. Fix: {halt['fix']}; then run the same command: it continues "
            f"the series ({PROVIDER_UNUSABLE})")


def status_text(record: dict) -> str:
    """A series' status as a person reads it: one stopped at a permanent provider error, or stopped early with
    its verdict decided, is stored waiting (so that the same command continues or decides it), but it waits
    for a fix or its decision, not for an approval."""
    if record.get("status") == "awaiting_approval" and (
            (record.get("pause") or {}).get("reason") == PROVIDER_UNUSABLE or stop_of(record) is not None):
        return "stopped"
    return str(record.get("status"))


def pause_text(series_id: str, record: dict, spent: Spend | None = None) -> str:
    pause = record.get("pause") or {}
    if pause.get("reason") == PROVIDER_UNUSABLE:
        return halt_text(series_id, pause)
    if stop_of(record) is not None:
        return decided_text(series_id, pause)
    cap = record["cap_usd"]         # every series record holds its cap (SeriesRun writes it at the start)
    if pause.get("reason") == "cap_above_project":
        return (f"series {series_id} waits for approval: its cap {dollars(cap)} is above the project cap "
                f"{dollars(record.get('project_cap_usd', 0))} (cap_above_project). A person runs "
                f"`aqven series approve {series_id}` on a terminal, then this same pytest command; "
                f"or `aqven series cancel {series_id}`")
    amount = spent.text(cap) if spent else f"${float(pause.get('spent_usd', 0)):.4f} of its {dollars(cap)} cap"
    return (f"series {series_id} paused near its cap: it spent {amount} (spend_near_cap). A person runs "
            f"`aqven series approve {series_id}` on a terminal (doubles the cap, or type another), then this "
            f"same pytest command continues it; or `aqven series cancel {series_id}`")


class Ledger:
    """One per process and project database; every method is one short transaction."""

    def __init__(self, store: Store, runner_id: str | None = None) -> None:
        self.store = store
        self.runner_id = runner_id or str(uuid.uuid4())
        self.discarded: list[tuple[str, str, str, int]] = []    # finishes whose claim another runner took
        self._join()

    @storage.rerun
    def _join(self) -> None:
        with self.store.transaction() as db:
            db.add_runner(self.runner_id, HOST, os.getpid(), db.now())

    @storage.rerun
    def heartbeat(self) -> None:
        with self.store.transaction() as db:
            db.beat(self.runner_id, db.now())

    @storage.rerun
    def try_start(self, series_id: str, variant: str, case: str, repeat: int) -> Decision:
        with self.store.transaction() as db:
            return self._try_start(db, series_id, variant, case, repeat, db.now(), {})

    def batch(self, ops: list[tuple]) -> list:
        """Several operations in one transaction: ("start", series_id, variant, case, repeat) -> Decision,
        ("claim", ...) the same for an attempt to start later, ("release", series_id, variant, case,
        repeat) -> None, and ("halt", series_id, pause) -> None (a permanent provider error: the series waits,
        PROVIDER_UNUSABLE). The deferred finishes go first, then the releases and halts (a claim then sees the
        spend, the free reserve and the halt), then the rest in order. Returns the results
        in the order of `ops`, an exception in place of the result of an operation that failed: when one
        fails (or a cut interrupts the transaction), it is rolled back and each operation is done again in a
        transaction of its own, run again as a whole after a cut (storage.rerun)."""
        order = sorted(range(len(ops)), key=lambda i: ops[i][0] in ("start", "claim"))
        results: list = [None] * len(ops)
        try:
            seen: dict = {}
            with self.store.transaction() as db:
                now = db.now()
                for i in order:
                    results[i] = self._op(db, ops[i], now, seen)
            return results
        except Exception as exc:     # noqa: BLE001 - one at a time, so each gets its own answer
            if isinstance(exc, storage.StoreAway):      # away, or stalled: alone they would wait as long each
                return [exc] * len(ops)
            if len(ops) == 1 and not isinstance(exc, storage.Interrupted):
                return [exc]
        for i in order:
            try:
                results[i] = self._alone(ops[i])
            except Exception as exc:  # noqa: BLE001 - the caller raises it where the operation was asked for
                results[i] = exc
        return results

    @storage.rerun
    def _alone(self, op: tuple) -> Any:
        with self.store.transaction() as db:
            return self._op(db, op, db.now(), {})

    def _op(self, db: Transaction, op: tuple, now: float, seen: dict) -> Any:
        operation, *args = op
        if operation in ("start", "claim"):
            series_id, variant, case, repeat = args
            return self._try_start(db, series_id, variant, case, repeat, now, seen, ahead=operation == "claim")
        seen.clear()        # what this transaction read of spend and claims
        if operation == "release":
            return self._release(db, *args)
        if operation == "halt":
            return db.pause_series(*args)
        raise ValueError(f"unknown ledger operation {operation!r}")

    def _try_start(self, db: Transaction, series_id: str, variant: str, case: str, repeat: int, now: float,
                   seen: dict, ahead: bool = False) -> Decision:
        """`seen` holds what this transaction already read (nobody else writes inside it): the series'
        status and cap, its spend, which runners are alive; a claim made here counts in the spend it keeps.
        `ahead`: a claim for later (Ledger.batch's "claim"), which never pauses the series."""
        aid = attempt_id(series_id, variant, case, repeat)
        if ("series", series_id) not in seen:
            # the cap alone: the whole record (with every case name) is read only to say why a series waits
            seen["series", series_id] = db.series_cap(series_id)
        status, cap = seen["series", series_id]
        finished, holder = db.attempt_claim(aid)
        if finished:
            return Decision(LedgerKind.REUSED)
        if status == "awaiting_approval":
            record = _record(db, series_id)
            if (record.get("pause") or {}).get("reason") == PROVIDER_UNUSABLE:
                return Decision(LedgerKind.HALTED, why=halt_text(series_id, record["pause"]))
            if stop_of(record) is not None:     # decided early: nothing more runs, nothing waits for approval
                return Decision(LedgerKind.STOPPED, why=pause_text(series_id, record))
            return Decision(LedgerKind.PAUSED,
                            why=pause_text(series_id, record, spend(db, series_id, self.runner_id, now, seen)))
        if status != "running":
            return Decision(LedgerKind.STOPPED, why=f"series {series_id} is {status}: no new attempt starts")
        if holder is not None:
            if _alive(db, holder, self.runner_id, now, seen):
                return Decision(LedgerKind.WAIT, why=CLAIMED_ELSEWHERE if holder != self.runner_id else "mine")
            db.drop_claim(aid)      # its runner died (not counted)
        s = seen.get(("spend", series_id)) or spend(db, series_id, self.runner_id, now, seen)
        if s.finished == 0 and s.running > 0:
            return Decision(LedgerKind.WAIT, why=FIRST_ALONE)
        cap = float(1.0 if cap is None else cap)
        committed = s.spent_usd + s.reserve_usd * s.running
        if committed >= float(NEAR) * cap:
            if s.running or ahead:
                return Decision(LedgerKind.WAIT, why="near the cap: running attempts finish first")
            pause = {"reason": "spend_near_cap", "spent_usd": round(s.spent_usd, 6)}
            db.pause_series(series_id, pause)
            seen["series", series_id] = ("awaiting_approval", cap)
            return Decision(LedgerKind.PAUSED, why=pause_text(series_id, _record(db, series_id), s))
        limit = cap - committed
        generation = db.claim(aid, series_id, self.runner_id, now, limit)
        seen["spend", series_id] = dataclasses.replace(s, running=s.running + 1)
        return Decision(LedgerKind.START, limit_usd=limit, generation=generation)

    def finish_later(self, record: dict, generation: int) -> None:
        """The attempt ran: its spend, its claim marked finished and its record, together, by group commit:
        in the store's next transaction (the next claim's, usually) or its timer's, within
        GROUP_COMMIT_SECONDS. Until then its claim stays running, counting its reserve. The row is made
        first: a record that cannot be written raises here, and the ledger is untouched.
        Fencing: the finish counts only if this runner still holds the claim of `generation` when it commits;
        else (a runner suspended past the lease, whose claim another runner took) it is discarded, no
        spend row, no record, and kept in `discarded` so the run says so."""
        row = attempt_row(record)
        self.store.defer(lambda db: self._finish(db, record, row, generation))

    def _finish(self, db: Transaction, record: dict, row: tuple, generation: int) -> None:
        amount = (record.get("cost_usd") or 0.0) + (record.get("check_cost_usd") or 0.0)
        if not db.record_finish(record["series_id"], row[0], self.runner_id, amount, record.get("unpriced_calls") or 0,
                                record["outcome"], db.now(), row, generation):
            self.discarded.append((record["series_id"], record["variant"], record["case"], record["repeat"]))

    def still_holds(self, series_id: str, variant: str, case: str, repeat: int, generation: int) -> bool:
        """A read, no transaction: whether a claim made earlier may still start (nobody paused or cancelled
        the series since, and no other runner took the claim while this one was suspended)."""
        with self.store.read() as db:
            row = db.claim_standing(series_id, attempt_id(series_id, variant, case, repeat), self.runner_id)
        return row is not None and row[0] == "running" and row[1] == generation

    @storage.rerun
    def release(self, series_id: str, variant: str, case: str, repeat: int) -> None:
        """A claimed attempt that did not run to its end (stopped before any call was paid)."""
        with self.store.transaction() as db:
            self._release(db, series_id, variant, case, repeat)

    def _release(self, db: Transaction, series_id: str, variant: str, case: str, repeat: int) -> None:
        db.release_claim(attempt_id(series_id, variant, case, repeat), self.runner_id)

    @storage.rerun
    def close(self) -> None:
        with self.store.transaction() as db:
            db.drop_runner(self.runner_id)


@storage.rerun
def cancel(store: Store, series_id: str, why: str, *, unless_complete: bool = False) -> bool:
    """`aqven series cancel`, or a run stopped early (-x, --maxfail): the series is cancelled and its
    verdict invalid. `unless_complete` (a stop): a series whose every attempt is recorded, this store's
    deferred finishes included, was not cut short: it stays undecided, and the same command decides it
    without a call, where a cancel would have thrown away every attempt it paid for."""
    verdict = {"state": "invalid", "reason": "cancelled", "text": f"No finding: the series was cancelled ({why})."}
    with store.transaction() as db:
        if unless_complete and _complete(db, series_id):
            return False
        return db.cancel_series(series_id, verdict, db.now())


def _complete(db: Transaction, series_id: str) -> bool:
    return db.count_finished(series_id) >= planned_attempts(_record(db, series_id))


@storage.rerun
def resume(store: Store, series_id: str, run: str | None) -> bool:
    """A series an earlier run stopped at a permanent provider error runs again (the same command after the
    fix): its attempts that were not recorded run now. A halt of this same run (another xdist worker met the
    error) stays. True when it resumed."""
    with store.transaction() as db:
        status, record, _, _ = known_series(db, series_id)
        pause = record.get("pause") or {}
        if status != "awaiting_approval" or pause.get("reason") != PROVIDER_UNUSABLE or pause.get("run") == run:
            return False
        return db.resume_series(series_id)


@storage.rerun
def apply_cap(store: Store, series_id: str, cap: SeriesCap) -> None:
    """An explicit cap on a series that continues: it runs under it; above the project cap it waits for approval.
    A cap a person approved is never lowered (the rerun's series line says so: plugin/session.py spend_lines)."""
    with store.transaction() as db:
        status, record, _, _ = known_series(db, series_id)
        if status != "running" or Decimal(record.get("cap_usd", "0")) == cap.cap_usd \
                or approved_cap_holds(record, cap):
            return
        pause = {"reason": "cap_above_project", "spent_usd": round(spend(db, series_id).spent_usd, 6)}
        db.set_cap(series_id, "awaiting_approval" if cap.needs_approval else "running", str(cap.cap_usd), cap.explicit,
                   cap.needs_approval, pause if cap.needs_approval else None)


@storage.rerun
def approve(store: Store, series_id: str, cap_usd: Decimal, approved_by: str) -> tuple[bool, dict]:
    """(whether this approval changed the series, what the database holds after its transaction: status,
    cap_usd, approved_by). Only a series still awaiting approval is approved: a cancel or another approval
    that landed first wins, and the caller says so."""
    with store.transaction() as db:
        won = db.approve_series(series_id, str(cap_usd), approved_by, db.now())
        status, cap, by = db.approval(series_id)
    return won, {"status": status, "cap_usd": cap, "approved_by": by}


@storage.rerun
def series_spend(store: Store, series_id: str) -> Spend:
    with store.transaction() as db:
        return spend(db, series_id)
