"""The project database `.aqven/aqven.sqlite`: series and their attempts, shared by every process."""
from __future__ import annotations

import atexit
import functools
import json
import sqlite3
import threading
import time
import uuid
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from . import storage

SCHEMA = """
CREATE TABLE IF NOT EXISTS aqven_schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS aqven_series (
  series_id TEXT PRIMARY KEY,
  experiment_id TEXT NOT NULL,
  flow_id TEXT,
  dataset_id TEXT NOT NULL,
  split TEXT NOT NULL CHECK (split IN ('dev', 'holdout')),
  question TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('awaiting_approval', 'running', 'done', 'cancelled', 'failed')),
  plan_key TEXT NOT NULL,
  created_at REAL NOT NULL,
  finished_at REAL,
  record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS aqven_series_by_experiment ON aqven_series (experiment_id, created_at DESC);
CREATE INDEX IF NOT EXISTS aqven_series_by_key ON aqven_series (plan_key, status);
CREATE TABLE IF NOT EXISTS aqven_series_attempts (
  attempt_id TEXT PRIMARY KEY,
  series_id TEXT NOT NULL REFERENCES aqven_series (series_id),
  variant_id TEXT NOT NULL,
  case_name TEXT NOT NULL,
  repeat INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'finished')),
  outcome TEXT,
  cost_usd TEXT NOT NULL DEFAULT '0',
  check_cost_usd TEXT NOT NULL DEFAULT '0',
  started_at REAL,
  finished_at REAL,
  record TEXT,
  UNIQUE (series_id, variant_id, case_name, repeat)
);
"""
SCHEMA_VERSION = 1
GROUP_COMMIT_SECONDS = 0.1      # an attempt record waits at most this long for its batch's COMMIT
SAVE_ATTEMPT = ("INSERT OR REPLACE INTO aqven_series_attempts (attempt_id, series_id, variant_id, case_name, repeat, "
                "state, outcome, cost_usd, check_cost_usd, started_at, finished_at, record) "
                "VALUES (?, ?, ?, ?, ?, 'finished', ?, ?, ?, ?, ?, ?)")
_STORES: "weakref.WeakSet[Store]" = weakref.WeakSet()


@functools.lru_cache(maxsize=1024)     # the claim and the finish of one attempt ask for the same id
def attempt_id(series_id: str, variant: str, case: str, repeat: int) -> str:
    return str(uuid.uuid5(_namespace(series_id), f"attempt|{variant}|{case}|{repeat}"))


def attempt_row(record: dict) -> tuple:
    """The finished row of an attempt's record (SAVE_ATTEMPT's parameters)."""
    return (attempt_id(record["series_id"], record["variant"], record["case"], record["repeat"]),
            record["series_id"], record["variant"], record["case"], record["repeat"], record["outcome"],
            repr(record["cost_usd"]), repr(record["check_cost_usd"]), record["started_at"],
            record["finished_at"], json.dumps(record))


@functools.lru_cache(maxsize=64)
def _namespace(series_id: str) -> uuid.UUID:
    return uuid.UUID(series_id)


def flush_all() -> None:
    """Commit every open store's deferred writes (before a read, at the end of a run loop, and at exit)."""
    for store in list(_STORES):
        store.flush()


atexit.register(flush_all)


class Store:
    def __init__(self, root: Path):
        self.path = root / ".aqven" / "aqven.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._wal()
        self._conn.execute("PRAGMA synchronous=NORMAL")     # WAL: a killed process loses nothing committed
        self._lock = threading.RLock()         # one transaction at a time on this connection (the flush timer)
        self._batch = threading.Lock()         # the deferred writes and their timer: never held while writing
        self._deferred: list[Callable[[sqlite3.Connection], None]] = []    # writes of the batch not yet committed
        self._timer: threading.Timer | None = None
        _STORES.add(self)
        with self.transaction() as db:
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT OR IGNORE INTO aqven_schema_versions VALUES ('series', ?)", (SCHEMA_VERSION,))
            storage.migrate(db)

    def _wal(self) -> None:
        """Switching to WAL takes a lock the busy handler does not wait for: retry it ourselves."""
        for _ in range(600):
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                time.sleep(0.1)
        self._conn.execute("PRAGMA journal_mode=WAL")

    def close(self) -> None:
        self.flush()
        _STORES.discard(self)
        self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: one writer at a time across every process of the run. The deferred writes go
        first, in the same transaction: they commit with it, or stay deferred when it fails."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            with self._batch:
                deferred, self._deferred = self._deferred, []
            try:
                for write in deferred:
                    write(self._conn)
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                with self._batch:
                    self._deferred[:0] = deferred
                raise

    def open_series(self, *, plan_key: str, experiment_id: str, flow_id: str, dataset_id: str, split: str,
                    question: str, record: dict, status: str = "running",
                    fresh_for: str | None = None, scope_key: str | None = None,
                    run: str | None = None) -> tuple[str, bool]:
        """The unfinished series with this plan key, or a new one. Returns (series id, created).
        fresh_for: a run token (--aqven-new-series): only a series that run created is continued; other
        unfinished ones with the key are cancelled, in the same transaction, so every worker agrees.
        run: this run's token, kept in the series it opens; a process of the same run whose inputs differ
        (another plan key, same `scope_key`: experiment, half, cases, repeats, variants) joins that series
        instead of starting one of its own: the caller sees the recorded snapshot differ."""
        with self.transaction() as db:
            if run is not None and scope_key is not None:
                joined = db.execute(
                    "SELECT series_id FROM aqven_series WHERE status IN ('running', 'awaiting_approval') "
                    "AND json_extract(record, '$.scope_key') = ? AND plan_key != ? AND EXISTS "
                    "(SELECT 1 FROM json_each(record, '$.runs') WHERE value = ?) ORDER BY created_at DESC",
                    (scope_key, plan_key, run)).fetchone()
                if joined is not None:
                    return joined[0], False
            sid = self._open_series(db, plan_key, experiment_id, flow_id, dataset_id, split, question, record,
                                    status, fresh_for, scope_key)
            closed = self._close_invalidated(db, sid[0], experiment_id, split, record)
            if closed:      # the run says so: `aqven series` lines of the terminal summary read it here
                db.execute("UPDATE aqven_series SET record = json_set(record, '$.closed', json(?)) WHERE series_id = ?",
                           (json.dumps(closed), sid[0]))
            if run is not None:     # every run that continues the series is named in it
                db.execute("UPDATE aqven_series SET record = json_set(record, '$.runs', json(?)) WHERE series_id = ? "
                           "AND NOT EXISTS (SELECT 1 FROM json_each(record, '$.runs') WHERE value = ?)",
                           (json.dumps([*self._runs(db, sid[0]), run]), sid[0], run))
            return sid

    def _close_invalidated(self, db, keep: str, experiment_id: str, split: str, record: dict) -> list[dict]:
        """Open series of the experiment and half whose input files differ from those of `record` (a dataset, a
        prompt edited since they started): they can never be continued, so they are closed, cancelled with the
        verdict invalid (inputs_changed), in the transaction that opens the new one. Returns what was closed and
        why: the files whose fingerprints differ (else the kinds of input whose hashes do)."""
        from ..experiments.inputs import differing, named  # noqa: PLC0415
        closed = []
        snapshot = record.get("snapshot") or {}
        files = {k: v for k, v in snapshot.items() if k != "cases_sha256"}     # the files, not the case selection
        for series_id, recorded, marks in db.execute(
                "SELECT series_id, json_extract(record, '$.snapshot'), json_extract(record, '$.fingerprints') "
                "FROM aqven_series WHERE experiment_id = ? AND split = ? AND status IN ('running', 'awaiting_approval') "
                "AND series_id != ?", (experiment_id, split, keep)).fetchall():
            before = {k: v for k, v in json.loads(recorded or "{}").items() if k != "cases_sha256"}
            if before == files or not files:
                continue
            touched = differing(json.loads(marks or "{}"), record.get("fingerprints") or {})
            changed = [named([p], self.path.parent.parent) for p in touched] or sorted(
                k.removesuffix("_sha256") for k in files.keys() | before.keys()
                if files.get(k) != before.get(k) and k.endswith("_sha256"))
            text = (f"No finding: its inputs changed since it started ({', '.join(changed[:5])}"
                    f"{f' and {len(changed) - 5} more' if len(changed) > 5 else ''}); a later run started a "
                    f"new series on the new inputs.")
            db.execute("UPDATE aqven_series SET status = 'cancelled', finished_at = ?, record = json_set(record, "
                       "'$.verdict', json(?)) WHERE series_id = ?",
                       (time.time(), json.dumps({"state": "invalid", "reason": "inputs_changed", "text": text}),
                        series_id))
            closed.append({"series": series_id, "changed": changed})
        return closed

    @staticmethod
    def _runs(db, series_id: str) -> list[str]:
        row = db.execute("SELECT json_extract(record, '$.runs') FROM aqven_series WHERE series_id = ?",
                         (series_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else []

    def _open_series(self, db, plan_key, experiment_id, flow_id, dataset_id, split, question, record, status,
                     fresh_for, scope_key) -> tuple[str, bool]:
        rows = db.execute("SELECT series_id, json_extract(record, '$.run_token') FROM aqven_series "
                          "WHERE plan_key = ? AND status IN ('running', 'awaiting_approval') "
                          "ORDER BY created_at DESC", (plan_key,)).fetchall()
        if fresh_for is not None:
            for old, token in rows:
                if token != fresh_for:
                    db.execute("UPDATE aqven_series SET status = 'cancelled', finished_at = ?, record = "
                               "json_set(record, '$.verdict', json(?)) WHERE series_id = ?",
                               (time.time(), json.dumps({"state": "invalid", "reason": "cancelled", "text":
                                "No finding: the series was cancelled (--aqven-new-series started another)."}),
                                old))
            rows = [r for r in rows if r[1] == fresh_for]
        if rows:
            return rows[0][0], False
        series_id = str(uuid.uuid4())
        db.execute("INSERT INTO aqven_series (series_id, experiment_id, flow_id, dataset_id, split, question, "
                   "status, plan_key, created_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (series_id, experiment_id, flow_id, dataset_id, split, question, status, plan_key,
                    time.time(), json.dumps({**record, "series_id": series_id, "run_token": fresh_for,
                                             "scope_key": scope_key})))
        return series_id, True

    def series(self, series_id: str) -> dict | None:
        row = self._conn.execute("SELECT status, record, created_at, finished_at FROM aqven_series WHERE series_id = ?",
                                 (series_id,)).fetchone()
        if row is None:
            return None
        return {**json.loads(row[1]), "status": row[0], "created_at": row[2], "finished_at": row[3]}

    def status(self, series_id: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT status FROM aqven_series WHERE series_id = ?", (series_id,)).fetchone()
        return row[0] if row else None

    def finished_attempt(self, series_id: str, variant: str, case: str, repeat: int) -> dict | None:
        row = self._conn.execute("SELECT record FROM aqven_series_attempts WHERE attempt_id = ? AND state = 'finished'",
                                 (attempt_id(series_id, variant, case, repeat),)).fetchone()
        return json.loads(row[0]) if row else None

    def defer(self, write: Callable[[sqlite3.Connection], None]) -> None:
        """Group commit: `write(db)` joins the batch that the next transaction of this store runs first (the
        next claim's, usually), committed within GROUP_COMMIT_SECONDS at the latest (a timer), or at flush().
        A killed process loses at most that batch (docs/performance.md says what that means for attempts).
        Never waits for a transaction in progress: an event loop may call it."""
        with self._batch:
            self._deferred.append(write)
            if self._timer is None:     # one timer at a time; a claim's transaction leaves it nothing to do
                self._timer = threading.Timer(GROUP_COMMIT_SECONDS, self._timed_flush)
                self._timer.daemon = True
                self._timer.start()

    def _timed_flush(self) -> None:
        with self._batch:
            self._timer = None
        try:
            self.flush()
        except sqlite3.Error:       # the writes stay deferred: the next transaction (at the latest the run's end) retries
            pass

    def flush(self) -> None:
        """Commit the deferred writes in one transaction."""
        with self._lock:
            with self._batch:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                pending = bool(self._deferred)
            if pending:
                with self.transaction():
                    pass

    def attempts(self, series_id: str) -> list[dict]:
        flush_all()         # what this process deferred, in any of its stores (the ledger has its own)
        rows = self._conn.execute("SELECT record FROM aqven_series_attempts WHERE series_id = ? AND state = 'finished'",
                                  (series_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def history(self, experiment_id: str, limit: int = 200) -> list[dict]:
        """The rates observed so far, for launch plans: the finished attempts of the experiment's latest finished
        series, at most `limit` per variant (its first cases by name, their repeats in order). A function of that
        series' data alone, so the same data gives the same plan (the last attempts by time did not: they were
        a different sample whenever attempts finished in another order). Only those records leave the database:
        reading every record of the experiment cost memory and time in proportion to its attempts."""
        flush_all()
        latest = self._conn.execute(
            "SELECT series_id FROM aqven_series WHERE experiment_id = ? AND status IN ('done', 'failed') "
            "ORDER BY finished_at DESC, series_id LIMIT 1", (experiment_id,)).fetchone()
        if latest is None:
            return []
        variants = self._conn.execute("SELECT DISTINCT variant_id FROM aqven_series_attempts WHERE series_id = ? "
                                      "ORDER BY variant_id", latest).fetchall()
        return [json.loads(record) for (variant,) in variants for (record,) in self._conn.execute(
            "SELECT record FROM aqven_series_attempts WHERE series_id = ? AND variant_id = ? AND state = 'finished' "
            "ORDER BY case_name, repeat LIMIT ?", (latest[0], variant, limit))]

