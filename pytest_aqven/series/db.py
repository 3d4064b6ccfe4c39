"""Series and their attempts in the project database (`storage`), shared by every process of a run."""
from __future__ import annotations

import atexit
import contextlib
import functools
import json
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from .. import storage
from ..storage import Transaction
from . import open_stores
from .open_stores import flush_all

GROUP_COMMIT_SECONDS = 0.1      # an attempt record waits at most this long for its batch's COMMIT


@functools.lru_cache(maxsize=1024)     # the claim and the finish of one attempt ask for the same id
def attempt_id(series_id: str, variant: str, case: str, repeat: int) -> str:
    return str(uuid.uuid5(_namespace(series_id), f"attempt|{variant}|{case}|{repeat}"))


def attempt_row(record: dict) -> tuple:
    """The finished row of an attempt's record (what Transaction.save_attempts takes)."""
    return (attempt_id(record["series_id"], record["variant"], record["case"], record["repeat"]),
            record["series_id"], record["variant"], record["case"], record["repeat"], record["outcome"],
            repr(record["cost_usd"]), repr(record["check_cost_usd"]), record["started_at"],
            record["finished_at"], json.dumps(record))


def planned_attempts(series: dict) -> int:
    """Every attempt of a series' plan (its record, or the series as Store.known_series gives it)."""
    return len(series["variants"]) * len(series["cases"]) * series["repeats"]


def spent_cases(record: dict) -> set[str]:
    """The cases a held-out series with a finding spent: every case it planned, or, stopped early
    (--aqven-stop-early), those an attempt reached (the others stay for a new series)."""
    return set(record.get("spent_cases") or record.get("cases") or [])


class HeldOutTaken(Exception):
    """A held-out series would open on cases another series already took: one that gave a finding
    (`running` False), or one another run still runs (`running` True). Held-out cases are spent once."""

    def __init__(self, series_id: str, running: bool) -> None:
        super().__init__(series_id)
        self.series_id = series_id
        self.running = running


def known_series(db: Transaction, series_id: str) -> tuple[str, dict, float, float | None]:
    """(status, record, created_at, finished_at) of a series that must exist (its id came from this database)."""
    row = db.series(series_id)
    if row is None:
        raise LookupError(f"series {series_id} is not in the project database")
    return row


@functools.lru_cache(maxsize=64)
def _namespace(series_id: str) -> uuid.UUID:
    return uuid.UUID(series_id)


def _flush_before_read() -> None:
    """A read sees what this process deferred; on a full disk it reads what was committed (the run stops on
    its own, with one message, where it writes)."""
    with contextlib.suppress(storage.disk.DiskFull):
        flush_all()


def _flush_at_exit() -> None:
    try:
        flush_all()
    except Exception as exc:
        if not isinstance(exc, (storage.StorageError, *storage.ERRORS)):
            raise
        # a store gone: what was not committed runs again with the same command


atexit.register(_flush_at_exit)


class Store:
    """The series and their attempts in the project database, with group commit of deferred writes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.db = storage.open_database(root)
        self._lock = threading.RLock()         # one transaction at a time on this store (the flusher's too)
        self._batch = threading.Lock()         # the deferred writes and the flusher's arming: never held while writing
        self._deferred: list[Callable[[Transaction], None]] = []    # writes of the batch not yet committed
        # the group commit's clock: one thread per store, armed by the first write of a batch (a timer thread
        # per batch made the caller wait for each new thread to take the GIL, the attempts' loop included)
        self._armed = False
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._flusher: threading.Thread | None = None
        open_stores.register(self)

    def close(self) -> None:
        self.flush()
        self._closing.set()
        self._wake.set()
        open_stores.forget(self)
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One writer at a time across every process of the run. The deferred writes go first, in the same
        transaction: they commit with it, or stay deferred when it fails."""
        deferred: list[Callable[[Transaction], None]] = []
        with self._lock:
            try:
                with self.db.transaction() as tx:
                    with self._batch:
                        deferred, self._deferred = self._deferred, []
                    for write in deferred:
                        write(tx)
                    yield tx
            except BaseException:
                with self._batch:
                    self._deferred[:0] = deferred
                raise

    @contextmanager
    def read(self) -> Iterator[Transaction]:
        """What is committed (this process's deferred writes not included: `flush_all` first when they matter)."""
        with self._lock, self.db.read() as tx:
            yield tx

    @storage.rerun
    def open_series(self, *, plan_key: str, experiment_id: str, flow_id: str, dataset_id: str, split: str,
                    question: str, record: dict, status: str = "running",
                    fresh_for: str | None = None, scope_key: str | None = None,
                    run: str | None = None, spend_once: float | None = None) -> tuple[str, bool]:
        """The unfinished series with this plan key, or a new one. Returns (series id, created).
        fresh_for: a run token (--aqven-new-series): only a series that run created is continued; other
        unfinished ones with the key are cancelled, in the same transaction, so every worker agrees.
        run: this run's token, kept in the series it opens; a process of the same run whose inputs differ
        (another plan key, same `scope_key`: experiment, half, cases, repeats, variants) joins that series
        instead of starting one of its own: the caller sees the recorded snapshot differ.
        spend_once: a held-out series, whose cases are spent once, with the claims' lease in seconds: no new
        series opens on a case of a series that gave a finding, or that another run still runs (HeldOutTaken);
        an open series of this plan key is continued all the same (runs of one series share its work by claims)."""
        with self.transaction() as db:
            if run is not None and scope_key is not None:
                joined = db.open_series_joined(scope_key, plan_key, run)
                if joined is not None:
                    return joined, False
            sid = self._open_series(db, plan_key, experiment_id, flow_id, dataset_id, split, question, record,
                                    status, fresh_for, scope_key, run, spend_once)
            closed = self._close_invalidated(db, sid[0], experiment_id, split, record)
            if closed:      # the run says so: `aqven series` lines of the terminal summary read it here
                db.set_closed(sid[0], closed)
            if run is not None:     # every run that continues the series is named in it
                db.add_run(sid[0], run)
            return sid

    def _close_invalidated(self, db: Transaction, keep: str, experiment_id: str, split: str, record: dict) -> list[dict]:
        """Open series of the experiment and half whose input files differ from those of `record` (a dataset, a
        prompt edited since they started): they can never be continued, so they are closed, cancelled with the
        verdict invalid (inputs_changed), in the transaction that opens the new one. Returns what was closed and
        why: the files whose fingerprints differ (else the kinds of input whose hashes do)."""
        from ..experiments.inputs import differing, named  # noqa: PLC0415
        closed = []
        snapshot = record.get("snapshot") or {}
        files = {k: v for k, v in snapshot.items() if k != "cases_sha256"}     # the files, not the case selection
        for series_id, recorded, marks in db.open_series_of(experiment_id, split, keep):
            # only the kinds of input both record: a release that hashes one more kind changed no input
            before = {k: v for k, v in recorded.items() if k != "cases_sha256" and k in files}
            if before == {k: v for k, v in files.items() if k in recorded} or not files:
                continue
            # fingerprints (mtimes) name the files a checkout edited; another checkout's (another machine's)
            # differ in every path and time: the kinds of input whose hashes differ name the change then
            here = any(self.root.resolve() in Path(p).parents for p in marks)
            touched = differing(marks, record.get("fingerprints") or {}) if here else []
            changed = [named([p], self.root) for p in touched] or sorted(
                k.removesuffix("_sha256") for k in files.keys() | before.keys()
                if files.get(k) != before.get(k) and k.endswith("_sha256"))
            text = (f"No finding: its inputs changed since it started ({', '.join(changed[:5])}"
                    f"{f' and {len(changed) - 5} more' if len(changed) > 5 else ''}); a later run started a "
                    f"new series on the new inputs.")
            db.cancel_series(series_id, {"state": "invalid", "reason": "inputs_changed", "text": text}, db.now())
            closed.append({"series": series_id, "changed": changed})
        return closed

    def _open_series(self, db: Transaction, plan_key, experiment_id, flow_id, dataset_id, split, question, record, status,
                     fresh_for, scope_key, run, spend_once) -> tuple[str, bool]:
        rows = db.open_series_by_key(plan_key)
        if fresh_for is not None:
            for old, token in rows:
                if token != fresh_for:
                    db.cancel_series(old, {"state": "invalid", "reason": "cancelled", "text": "No finding: the "
                                           "series was cancelled (--aqven-new-series started another)."}, db.now())
            rows = [r for r in rows if r[1] == fresh_for]
        if rows:
            return rows[0][0], False
        older = self._older_format(db, experiment_id, split, plan_key, record, scope_key) if fresh_for is None else None
        if older is not None:
            return older, False
        if spend_once is not None:
            self._taken_elsewhere(db, experiment_id, split, record, run, spend_once)
        series_id = str(uuid.uuid4())
        db.insert_series(series_id, experiment_id, flow_id, dataset_id, split, question, status, plan_key,
                         db.now(), {**record, "series_id": series_id, "run_token": fresh_for, "scope_key": scope_key})
        return series_id, True

    @staticmethod
    def _older_format(db: Transaction, experiment_id: str, split: str, plan_key: str, record: dict,
                      scope_key: str | None) -> str | None:
        """An open series of this selection that an older release recorded: its snapshot holds fewer kinds of
        input (a release added some), each equal to this one's. Its inputs did not change: it is continued
        under this release's plan key and hashes (its attempts reused), not closed as inputs_changed."""
        snapshot = record.get("snapshot") or {}
        for series_id, before, _ in db.open_series_of(experiment_id, split, ""):
            if not before.keys() < snapshot.keys() or any(snapshot[k] != v for k, v in before.items()):
                continue
            found = db.series(series_id)
            recorded = found[1] if found else {}
            if all(recorded.get(k) == record.get(k) for k in ("cases", "repeats", "variants")):
                db.adopt_series(series_id, plan_key, snapshot, record.get("fingerprints") or {}, scope_key)
                return series_id
        return None

    @staticmethod
    def _taken_elsewhere(db: Transaction, experiment_id: str, split: str, record: dict, run: str | None,
                         lease_s: float) -> None:
        """In the transaction that would open a held-out series: HeldOutTaken when a case of it gave a finding
        of another series (this checkout's run, another checkout's on the same store, a resumed runner's), or
        is run by an open series of the same inputs that another run is running now (a runner of it holds a
        live claim). An open series whose runners are all gone takes nothing: `aqven series cancel` or its own
        command ends it; one on other inputs is closed as inputs_changed."""
        cases = set(record.get("cases") or [])
        db.ensure_findings()
        for series_id, recorded, _ in db.held_out_findings(experiment_id):
            if cases & spent_cases(recorded):
                raise HeldOutTaken(series_id, running=False)
        files = {k: v for k, v in (record.get("snapshot") or {}).items() if k != "cases_sha256"}
        now = db.now()
        for series_id, snapshot, _ in db.open_series_of(experiment_id, split, ""):
            if {k: v for k, v in snapshot.items() if k != "cases_sha256"} != files:
                continue
            found = db.series(series_id)
            recorded = found[1] if found else {}
            if run in (recorded.get("runs") or []) or not cases & set(recorded.get("cases") or []):
                continue
            beats = [db.runner(runner_id) for runner_id, _ in db.running_claims(series_id)]
            if any(beat is not None and now - beat[2] < lease_s for beat in beats):
                raise HeldOutTaken(series_id, running=True)

    @storage.rerun
    def own(self, package: str) -> None:
        """The store holds this project's series (one database, one project): recorded by its first series;
        StorageError (storage.foreign) when it holds another project's."""
        with self.transaction() as db:
            recorded = db.own_project(package)
        if recorded != package:
            raise storage.foreign(self.root, recorded, package)

    def series(self, series_id: str) -> dict | None:
        with self.read() as db:
            row = db.series(series_id)
        if row is None:
            return None
        status, record, created_at, finished_at = row
        return {**record, "status": status, "created_at": created_at, "finished_at": finished_at}

    def known_series(self, series_id: str) -> dict:
        """`series` of a series known to exist (its attempts ran); KeyError when it does not."""
        found = self.series(series_id)
        if found is None:
            raise KeyError(f"no series {series_id} in the project database")
        return found

    def status(self, series_id: str) -> str | None:
        with self.read() as db:
            return db.series_status(series_id)

    def finished_attempt(self, series_id: str, variant: str, case: str, repeat: int) -> dict | None:
        with self.read() as db:
            return db.finished_attempt(attempt_id(series_id, variant, case, repeat))

    def defer(self, write: Callable[[Transaction], None]) -> None:
        """Group commit: `write(db)` joins the batch that the next transaction of this store runs first (the
        next claim's, usually), committed within GROUP_COMMIT_SECONDS at the latest (the flusher), or at flush().
        A killed process loses at most that batch (docs/performance.md says what that means for attempts).
        Never waits for a transaction in progress: an event loop may call it."""
        with self._batch:
            self._deferred.append(write)
            if self._armed:             # the flusher commits this batch within the interval already
                return
            self._armed = True
            if self._flusher is None:   # started once per store: the only wait for a thread to start
                self._flusher = threading.Thread(target=self._flush_later, name="aqven-commit", daemon=True)
                self._flusher.start()
        self._wake.set()

    def _flush_later(self) -> None:
        """The flusher: each time it is armed, the interval, then a flush (the writes stay deferred when it
        fails: the next transaction, at the latest the run's end, retries)."""
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing.wait(GROUP_COMMIT_SECONDS):
                return
            with self._batch:
                self._armed = False
            try:
                self.flush()
            except storage.ERRORS:
                pass

    @storage.rerun
    def flush(self) -> None:
        """Commit the deferred writes in one transaction."""
        with self._lock:
            with self._batch:
                pending = bool(self._deferred)
            if pending:
                with self.transaction():
                    pass

    def attempts(self, series_id: str) -> list[dict]:
        _flush_before_read()        # what this process deferred, in any of its stores (the ledger has its own)
        with self.read() as db:
            return db.finished_attempts(series_id)

    def history(self, experiment_id: str, limit: int = 200) -> list[dict]:
        """The rates observed so far, for launch plans: the finished attempts of the experiment's latest finished
        series, at most `limit` per variant (its first cases by name, their repeats in order). A function of that
        series' data alone, so the same data gives the same plan (the last attempts by time did not: they were
        a different sample whenever attempts finished in another order). Only those records leave the database:
        reading every record of the experiment cost memory and time in proportion to its attempts."""
        _flush_before_read()
        with self.read() as db:
            return db.history(experiment_id, limit)


@storage.rerun
def unpublished_series(store: Store, plan_key: str) -> str | None:
    """A series with this plan key whose finding was recorded but never published by the run that decided
    it (a crash): the rerun continues it instead of running the held-out half again."""
    with store.transaction() as db:
        db.ensure_findings()
        return db.unpublished_finding(plan_key)
