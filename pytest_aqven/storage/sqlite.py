"""The SQLite backend: the project database `.aqven/aqven.sqlite`, shared by every process of one machine.

A transaction is BEGIN IMMEDIATE (one writer at a time across processes, others wait up to 60 s); the file
is in WAL mode, so readers never wait for the writer and a killed process loses nothing committed."""
from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, TypeVar

from . import disk, schema
from .disk import StorageError

if TYPE_CHECKING:      # the interface (the package) opens this backend: the alias is for annotations only
    from .base import Record

BUSY_MS = 60000      # a read-only look's wait (a writer's is disk.LOCK_WAIT_S)
OPEN = "('running', 'awaiting_approval')"
T = TypeVar("T")


def _locked(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def _retry_locked(fn: Callable[[], T], path: Path) -> T:
    """The busy handler does not cover every lock (a schema change, the switch to WAL): retry those ourselves,
    for disk.LOCK_WAIT_S in all; then Stalled, naming the writer that holds the database."""
    deadline = time.monotonic() + disk.LOCK_WAIT_S
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if not _locked(exc):
                raise
            if time.monotonic() > deadline:
                raise disk.stalled(str(path), Writer(path).holder()) from None
            time.sleep(0.05)


def _boot() -> tuple[str, float]:
    """(this boot's id, the epoch time of this boot as the first process of it to ask saw it), kept in a file of
    the temporary folder named by the boot id, so every process of this machine's boot shares one anchor."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "", time.time() - time.monotonic()       # no boot id: one anchor per process
    anchor = Path(tempfile.gettempdir()) / f"aqven-clock-{boot_id}"
    for _ in range(100):
        try:
            return boot_id, float(anchor.read_text())
        except (OSError, ValueError):
            pass
        try:                # written whole, then linked: a reader never sees half of it; the first link wins
            fd, temp = tempfile.mkstemp(dir=anchor.parent, prefix=".aqven-clock-")
            with os.fdopen(fd, "w") as f:
                f.write(repr(time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)))
            try:
                os.link(temp, anchor)
            except FileExistsError:
                pass
            finally:
                os.unlink(temp)
        except OSError:
            break
    return boot_id, time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


@functools.lru_cache(maxsize=1)
def _anchor() -> float:
    return _boot()[1]


def steady_now() -> float:
    """Epoch seconds by a clock no step of the wall clock moves (NTP, a manual set): the machine's time since
    boot (CLOCK_BOOTTIME: it counts a suspend, as a lease must) from one anchor per boot. Every runner of an
    SQLite database is on this machine, so heartbeats and claims judged by it are never taken from a live
    runner because the clock stepped; its times stay within a step of the wall clock for display."""
    return _anchor() + time.clock_gettime(time.CLOCK_BOOTTIME)


def _full(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the database file; None when it is gone."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _connect(path: Path) -> sqlite3.Connection:
    """A writer's connection: SQLite's busy handler waits disk.LOCK_WAIT_S for another writer's turn."""
    conn = sqlite3.connect(path, timeout=disk.LOCK_WAIT_S, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={int(disk.LOCK_WAIT_S * 1000)}")
    return conn


class Writer:
    """Who holds the writer's turn, in a file beside the database (`aqven.sqlite-writer`): SQLite does not say,
    and a runner that waited past disk.LOCK_WAIT_S names it. One write of a few bytes per transaction, in
    place (no new block: a full disk does not fail it)."""

    def __init__(self, path: Path) -> None:
        self.file = path.with_name(path.name + "-writer")
        self._fd: int | None = None
        self._me = f"{os.getpid()} {socket.gethostname()}".ljust(128)[:128].encode()

    def took(self) -> None:
        try:
            if self._fd is None:
                self._fd = os.open(self.file, os.O_RDWR | os.O_CREAT, 0o644)
            os.pwrite(self._fd, self._me, 0)
        except OSError:
            pass        # only a message needs it

    def holder(self) -> str:
        try:
            pid, host = self.file.read_text().split()[:2]
            return disk.holder(int(pid), host)
        except (OSError, ValueError):
            return "a runner that did not say which (an older pytest-aqven, or another tool)"

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def newer(path: Path, version: int) -> StorageError:
    """A database a newer pytest-aqven wrote: never opened, never changed."""
    return StorageError(f"pytest-aqven: the project database {path} was written by a newer pytest-aqven (schema "
                        f"version {version}, this one knows {schema.LATEST}): upgrade pytest-aqven; nothing was "
                        f"run or changed.")


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Inside the caller's transaction: apply every migration above the stored version."""
    row = conn.execute("SELECT version FROM aqven_schema_versions WHERE component = 'series'").fetchone()
    version = row[0] if row else 1
    if version > schema.LATEST:
        raise newer(path, version)
    for target in range(version + 1, schema.LATEST + 1):
        for statement in schema.script(schema.MIGRATIONS[target], "sqlite"):
            conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO aqven_schema_versions VALUES ('series', ?)", (target,))


class SqliteDatabase:
    """One connection per store, shared by the threads of a process under one lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        disk.refuse_outside(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.raw = _connect(path)
        self.writer = Writer(path)
        self._identity = _identity(path)       # the file opened: one removed or replaced since is noticed
        self._wal()
        self.raw.execute("PRAGMA synchronous=NORMAL")     # WAL: a killed process loses nothing committed
        self._lock = threading.RLock()         # one transaction at a time on this connection
        with self.transaction():
            for statement in schema.script(schema.SERIES, "sqlite"):
                self.raw.execute(statement)
            self.raw.execute("INSERT OR IGNORE INTO aqven_schema_versions VALUES ('series', ?)",
                             (schema.SERIES_VERSION,))
            migrate(self.raw, path)

    def _wal(self) -> None:
        """Switching to WAL takes a lock the busy handler does not wait for: retry it ourselves."""
        for _ in range(600):
            try:
                self.raw.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc):
                    raise
                time.sleep(0.1)
        self.raw.execute("PRAGMA journal_mode=WAL")

    @contextmanager
    def transaction(self) -> Iterator[SqliteTransaction]:
        with self._lock:
            try:
                self.raw.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                raise disk.stalled(self.location, self.writer.holder()) from None
            self.writer.took()
            try:
                if _identity(self.path) != self._identity:
                    raise disk.gone(self.path)
                yield SqliteTransaction(self.raw)
                self.raw.execute("COMMIT")
            except BaseException as exc:
                if self.raw.in_transaction:
                    self.raw.execute("ROLLBACK")
                if isinstance(exc, sqlite3.OperationalError) and _full(exc):
                    raise disk.full(self.path) from None
                raise

    @contextmanager
    def read(self) -> Iterator[SqliteTransaction]:
        with self._lock:
            yield SqliteTransaction(self.raw)

    def close(self) -> None:
        self.raw.close()
        self.writer.close()


@contextmanager
def peek(path: Path) -> Iterator[SqliteTransaction | None]:
    """Read-only: None when the file does not exist (nothing is created)."""
    if not path.exists():
        yield None
        return
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_MS / 1000)
    try:
        yield SqliteTransaction(conn)
    finally:
        conn.close()


def version(path: Path) -> int | None:
    """The series schema version of a database file; None when it has none yet."""
    if not path.exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_MS / 1000)
    try:
        row = conn.execute("SELECT version FROM aqven_schema_versions WHERE component = 'series'").fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        conn.close()
    return row[0] if row else None


def _loads(text: str | None) -> Record:
    out: dict[str, Any] = json.loads(text or "{}")
    return out


class SqliteTransaction:
    DIALECT = "sqlite"
    """Every statement pytest-aqven runs on SQLite. `raw`: the connection (this backend's tests read it)."""

    def __init__(self, raw: sqlite3.Connection) -> None:
        self.raw = raw
        self._x = raw.execute

    # --- series ---------------------------------------------------------------------------------------
    def insert_series(self, series_id: str, experiment_id: str, flow_id: str | None, dataset_id: str,
                      split: str, question: str, status: str, plan_key: str, created_at: float, record: Record) -> None:
        self._x("INSERT INTO aqven_series (series_id, experiment_id, flow_id, dataset_id, split, question, "
                "status, plan_key, created_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (series_id, experiment_id, flow_id, dataset_id, split, question, status, plan_key, created_at,
                 json.dumps(record)))

    def series(self, series_id: str) -> tuple[str, Record, float, float | None] | None:
        row = self._x("SELECT status, record, created_at, finished_at FROM aqven_series WHERE series_id = ?",
                      (series_id,)).fetchone()
        return None if row is None else (row[0], json.loads(row[1]), row[2], row[3])

    def series_status(self, series_id: str) -> str | None:
        row = self._x("SELECT status FROM aqven_series WHERE series_id = ?", (series_id,)).fetchone()
        return row[0] if row else None

    def series_cap(self, series_id: str) -> tuple[str, Any] | None:
        out: tuple[str, Any] | None = self._x(
            "SELECT status, json_extract(record, '$.cap_usd') FROM aqven_series WHERE series_id = ?",
            (series_id,)).fetchone()
        return out

    def series_question(self, series_id: str) -> str | None:
        row = self._x("SELECT question FROM aqven_series WHERE series_id = ?", (series_id,)).fetchone()
        return row[0] if row else None

    def series_ids(self, prefix: str = "") -> list[str]:
        return [r[0] for r in self._x("SELECT series_id FROM aqven_series WHERE series_id LIKE ? || '%' "
                                      "ORDER BY created_at DESC", (prefix,))]

    def open_series_by_key(self, plan_key: str) -> list[tuple[str, str | None]]:
        return self._x("SELECT series_id, json_extract(record, '$.run_token') FROM aqven_series "
                       f"WHERE plan_key = ? AND status IN {OPEN} ORDER BY created_at DESC", (plan_key,)).fetchall()

    def open_series_joined(self, scope_key: str, plan_key: str, run: str) -> str | None:
        row = self._x(f"SELECT series_id FROM aqven_series WHERE status IN {OPEN} "
                      "AND json_extract(record, '$.scope_key') = ? AND plan_key != ? AND EXISTS "
                      "(SELECT 1 FROM json_each(record, '$.runs') WHERE value = ?) ORDER BY created_at DESC",
                      (scope_key, plan_key, run)).fetchone()
        return row[0] if row else None

    def open_series_of(self, experiment_id: str, split: str, keep: str) -> list[tuple[str, Record, Record]]:
        rows = self._x("SELECT series_id, json_extract(record, '$.snapshot'), json_extract(record, '$.fingerprints') "
                       f"FROM aqven_series WHERE experiment_id = ? AND split = ? AND status IN {OPEN} "
                       "AND series_id != ?", (experiment_id, split, keep)).fetchall()
        return [(sid, _loads(snapshot), _loads(marks)) for sid, snapshot, marks in rows]

    def adopt_series(self, series_id: str, plan_key: str, snapshot: Record, fingerprints: Record,
                     scope_key: str | None) -> None:
        self._x("UPDATE aqven_series SET plan_key = ?, record = json_set(record, '$.snapshot', json(?), "
                "'$.fingerprints', json(?), '$.scope_key', ?) WHERE series_id = ?",
                (plan_key, json.dumps(snapshot), json.dumps(fingerprints), scope_key, series_id))

    def series_runs(self, series_id: str) -> list[str]:
        row = self._x("SELECT json_extract(record, '$.runs') FROM aqven_series WHERE series_id = ?",
                      (series_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else []

    def add_run(self, series_id: str, run: str) -> None:
        self._x("UPDATE aqven_series SET record = json_set(record, '$.runs', json(?)) WHERE series_id = ? "
                "AND NOT EXISTS (SELECT 1 FROM json_each(record, '$.runs') WHERE value = ?)",
                (json.dumps([*self.series_runs(series_id), run]), series_id, run))

    def set_closed(self, series_id: str, closed: list[Record]) -> None:
        self._x("UPDATE aqven_series SET record = json_set(record, '$.closed', json(?)) WHERE series_id = ?",
                (json.dumps(closed), series_id))

    def cancel_series(self, series_id: str, verdict: Record, at: float) -> bool:
        return self._x("UPDATE aqven_series SET status = 'cancelled', finished_at = ?, record = "
                       "json_set(record, '$.verdict', json(?)) WHERE series_id = ? "
                       f"AND status IN {OPEN}", (at, json.dumps(verdict), series_id)).rowcount > 0

    def pause_series(self, series_id: str, pause: Record) -> None:
        self._x("UPDATE aqven_series SET status = 'awaiting_approval', record = "
                "json_set(record, '$.pause', json(?), '$.needs_approval', json('true')) "
                "WHERE series_id = ? AND status = 'running'", (json.dumps(pause), series_id))

    def set_cap(self, series_id: str, status: str, cap_usd: str, cap_from: Any, needs_approval: bool,
                pause: Record | None) -> None:
        self._x("UPDATE aqven_series SET status = ?, record = json_set(record, '$.cap_usd', ?, '$.cap_from', ?, "
                "'$.needs_approval', json(?), '$.pause', json(?)) WHERE series_id = ?",
                (status, cap_usd, cap_from, "true" if needs_approval else "false", json.dumps(pause), series_id))

    def resume_series(self, series_id: str) -> bool:
        return self._x("UPDATE aqven_series SET status = 'running', record = json_set(json_remove(record, '$.pause'), "
                       "'$.needs_approval', json('false')) WHERE series_id = ? AND status = 'awaiting_approval'",
                       (series_id,)).rowcount > 0

    def approve_series(self, series_id: str, cap_usd: str, approved_by: str, at: float) -> bool:
        return self._x("UPDATE aqven_series SET status = 'running', record = json_set(json_remove(record, '$.pause'), "
                       "'$.cap_usd', ?, '$.approved_by', ?, '$.approved_at', ?, '$.needs_approval', json('false')) "
                       "WHERE series_id = ? AND status = 'awaiting_approval'",
                       (cap_usd, approved_by, at, series_id)).rowcount > 0

    def approval(self, series_id: str) -> tuple[str, Any, Any]:
        out: tuple[str, Any, Any] = self._x(
            "SELECT status, json_extract(record, '$.cap_usd'), json_extract(record, '$.approved_by') "
            "FROM aqven_series WHERE series_id = ?", (series_id,)).fetchone()
        return out

    def finish_series(self, series_id: str, status: str, record: Record, at: float) -> None:
        self._x("UPDATE aqven_series SET status = ?, finished_at = COALESCE(finished_at, ?), record = ? "
                "WHERE series_id = ?", (status, at, json.dumps(record), series_id))

    # --- attempts -------------------------------------------------------------------------------------
    SAVE_ATTEMPT = ("INSERT OR REPLACE INTO aqven_series_attempts (attempt_id, series_id, variant_id, case_name, "
                    "repeat, state, outcome, cost_usd, check_cost_usd, started_at, finished_at, record) "
                    "VALUES (?, ?, ?, ?, ?, 'finished', ?, ?, ?, ?, ?, ?)")

    def save_attempts(self, rows: list[tuple[Any, ...]]) -> None:
        self.raw.executemany(self.SAVE_ATTEMPT, rows)

    def finished_attempt(self, attempt_id: str) -> Record | None:
        row = self._x("SELECT record FROM aqven_series_attempts WHERE attempt_id = ? AND state = 'finished'",
                      (attempt_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def finished_attempts(self, series_id: str, *, case: str | None = None, variant: str | None = None,
                          repeat: int | None = None, by_finish: bool = False) -> list[Record]:
        query = ("SELECT record FROM aqven_series_attempts WHERE series_id = ? AND state = 'finished'"
                 + (" AND case_name = ?" if case is not None else "")
                 + (" AND variant_id = ?" if variant is not None else "")
                 + (" AND repeat = ?" if repeat is not None else "")
                 + (" ORDER BY finished_at" if by_finish else ""))
        params = [series_id] + [p for p in (case, variant, repeat) if p is not None]
        return [json.loads(r) for (r,) in self._x(query, params)]

    def count_finished(self, series_id: str) -> int:
        out: int = self._x("SELECT COUNT(*) FROM aqven_series_attempts WHERE series_id = ? AND state = 'finished'",
                           (series_id,)).fetchone()[0]
        return out

    def finished_keys(self, series_id: str) -> set[tuple[str, str, int]]:
        return {(v, c, r) for v, c, r in self._x("SELECT variant_id, case_name, repeat FROM aqven_series_attempts "
                                                 "WHERE series_id = ? AND state = 'finished'", (series_id,))}

    def outcome_counts(self, series_id: str) -> list[tuple[str, int]]:
        return self._x("SELECT outcome, COUNT(*) FROM aqven_series_attempts WHERE series_id = ? AND "
                       "state = 'finished' GROUP BY outcome ORDER BY COUNT(*) DESC, outcome", (series_id,)).fetchall()

    def history(self, experiment_id: str, limit: int) -> list[Record]:
        latest = self._x("SELECT series_id FROM aqven_series WHERE experiment_id = ? AND status IN ('done', 'failed') "
                         "ORDER BY finished_at DESC, series_id LIMIT 1", (experiment_id,)).fetchone()
        if latest is None:
            return []
        variants = self._x("SELECT DISTINCT variant_id FROM aqven_series_attempts WHERE series_id = ? "
                           "ORDER BY variant_id", latest).fetchall()
        return [json.loads(record) for (variant,) in variants for (record,) in self._x(
            "SELECT record FROM aqven_series_attempts WHERE series_id = ? AND variant_id = ? AND state = 'finished' "
            "ORDER BY case_name, repeat LIMIT ?", (latest[0], variant, limit))]

    # --- ledger: runners, claims, spend ---------------------------------------------------------------
    def now(self) -> float:
        return steady_now()

    def add_runner(self, runner_id: str, host: str, pid: int, at: float) -> None:
        self._x("INSERT OR REPLACE INTO aqven_runners VALUES (?, ?, ?, ?, ?)", (runner_id, host, pid, at, at))

    def beat(self, runner_id: str, at: float) -> None:
        self._x("UPDATE aqven_runners SET heartbeat_at = ? WHERE runner_id = ?", (at, runner_id))

    def runner(self, runner_id: str) -> tuple[str, int, float] | None:
        out: tuple[str, int, float] | None = self._x(
            "SELECT host, pid, heartbeat_at FROM aqven_runners WHERE runner_id = ?",
            (runner_id,)).fetchone()
        return out

    def drop_runner(self, runner_id: str) -> None:
        self._x("DELETE FROM aqven_claims WHERE runner_id = ? AND state = 'running'", (runner_id,))
        self._x("DELETE FROM aqven_runners WHERE runner_id = ?", (runner_id,))

    def spend_totals(self, series_id: str) -> tuple[float, float, int, int] | None:
        out: tuple[float, float, int, int] | None = self._x(
            "SELECT spent_usd, reserve_usd, finished, unpriced_attempts FROM aqven_spend_totals "
            "WHERE series_id = ?", (series_id,)).fetchone()
        return out

    def running_claims(self, series_id: str) -> list[tuple[str, int]]:
        return self._x("SELECT runner_id, COUNT(*) FROM aqven_claims WHERE series_id = ? AND state = 'running' "
                       "GROUP BY runner_id", (series_id,)).fetchall()

    def attempt_claim(self, attempt_id: str) -> tuple[bool, str | None]:
        finished, holder = self._x(
            "SELECT EXISTS (SELECT 1 FROM aqven_series_attempts WHERE attempt_id = ? AND state = 'finished'), "
            "(SELECT runner_id FROM aqven_claims WHERE attempt_id = ?)", (attempt_id, attempt_id)).fetchone()
        return bool(finished), holder

    def drop_claim(self, attempt_id: str) -> None:
        self._x("DELETE FROM aqven_claims WHERE attempt_id = ?", (attempt_id,))

    def release_claim(self, attempt_id: str, runner_id: str) -> None:
        self._x("DELETE FROM aqven_claims WHERE attempt_id = ? AND runner_id = ? AND state = 'running'",
                (attempt_id, runner_id))

    def claim(self, attempt_id: str, series_id: str, runner_id: str, at: float, limit_usd: float) -> int:
        self._x("UPDATE aqven_counters SET value = value + 1 WHERE name = 'claim_generation'")
        generation = self._x("SELECT value FROM aqven_counters WHERE name = 'claim_generation'").fetchone()[0]
        self._x("INSERT INTO aqven_claims (attempt_id, series_id, runner_id, state, claimed_at, limit_usd, "
                "generation) VALUES (?, ?, ?, 'running', ?, ?, ?)",
                (attempt_id, series_id, runner_id, at, limit_usd, generation))
        out: int = generation
        return out

    def claim_standing(self, series_id: str, attempt_id: str, runner_id: str) -> tuple[str, int | None] | None:
        out: tuple[str, int | None] | None = self._x(
            "SELECT s.status, c.generation FROM aqven_series s LEFT JOIN aqven_claims c ON "
            "c.attempt_id = ? AND c.runner_id = ? AND c.state = 'running' WHERE s.series_id = ?",
            (attempt_id, runner_id, series_id)).fetchone()
        return out

    def record_finish(self, series_id: str, attempt_id: str, runner_id: str, spend_usd: float,
                      unpriced_calls: int, outcome: str, at: float, row: tuple[Any, ...], generation: int) -> bool:
        # the fence and the claim's finish in one statement: each statement gives up the GIL and waits to take it
        # back, and at 100 in flight the reading of the fence alone took 90 to 175 µs a finish in this thread
        if self._x("UPDATE aqven_claims SET state = 'finished' WHERE attempt_id = ? AND runner_id = ? "
                   "AND generation = ? AND state = 'running'", (attempt_id, runner_id, generation)).rowcount != 1:
            return False
        self._x("INSERT INTO aqven_spend (series_id, attempt_id, runner_id, spend_usd, unpriced_calls, outcome, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", (series_id, attempt_id, runner_id, spend_usd, unpriced_calls,
                                                 outcome, at))
        self._x(self.SAVE_ATTEMPT, row)
        return True

    # --- the project --------------------------------------------------------------------------------------
    def project(self) -> str | None:
        row = self._x("SELECT value FROM aqven_project WHERE key = 'package'").fetchone()
        return row[0] if row else None

    def own_project(self, package: str) -> str:
        for statement in schema.script(schema.PROJECT, self.DIALECT):
            self._x(statement)
        recorded = self.project()
        if recorded is None:
            self._x("INSERT INTO aqven_project VALUES ('package', ?)", (package,))
        return recorded or package

    # --- findings ---------------------------------------------------------------------------------------
    def ensure_findings(self) -> None:
        for statement in schema.script(schema.FINDINGS, "sqlite"):
            self._x(statement)

    def finding(self, series_id: str) -> str | None:
        row = self._x("SELECT text FROM aqven_findings WHERE series_id = ?", (series_id,)).fetchone()
        return row[0] if row else None

    def insert_finding(self, series_id: str, experiment_id: str, text: str, at: float) -> None:
        self._x("INSERT INTO aqven_findings (series_id, experiment_id, plan_key, text, recorded_at) "
                "SELECT series_id, ?, plan_key, ?, ? FROM aqven_series WHERE series_id = ?",
                (experiment_id, text, at, series_id))

    def findings(self) -> list[tuple[str, str, str]]:
        return [tuple(r) for r in self._x("SELECT series_id, experiment_id, text FROM aqven_findings "
                                          "ORDER BY recorded_at")]

    def held_out_findings(self, experiment_id: str) -> list[tuple[str, Record, str]]:
        rows = self._x("SELECT f.series_id, s.record, f.text FROM aqven_findings f JOIN aqven_series s "
                       "USING (series_id) WHERE f.experiment_id = ?", (experiment_id,)).fetchall()
        return [(sid, json.loads(record), text) for sid, record, text in rows]

    def has_open_held_out(self, experiment_id: str) -> bool:
        return self._x(f"SELECT 1 FROM aqven_series WHERE experiment_id = ? AND split = 'holdout' AND status "
                       f"IN {OPEN} LIMIT 1", (experiment_id,)).fetchone() is not None

    def unpublished_finding(self, plan_key: str) -> str | None:
        row = self._x("SELECT series_id FROM aqven_findings WHERE plan_key = ? AND published_at IS NULL "
                      "ORDER BY recorded_at DESC LIMIT 1", (plan_key,)).fetchone()
        return row[0] if row else None

    def mark_published(self, series_ids: list[str], at: float) -> None:
        self.raw.executemany("UPDATE aqven_findings SET published_at = ? WHERE series_id = ? AND published_at IS NULL",
                             [(at, series_id) for series_id in series_ids])

    def findings_md_shas(self) -> set[str]:
        return {r[0] for r in self._x("SELECT sha256 FROM aqven_findings_md")}

    def add_findings_md(self, sha256: str, at: float) -> None:
        self._x("INSERT OR IGNORE INTO aqven_findings_md (sha256, written_at) VALUES (?, ?)", (sha256, at))


class Executes(Protocol):
    """What the limits' statements run on: a sqlite3 connection, or postgres.QMarks over a psycopg one."""
    def execute(self, query: str, params: Any = ..., /) -> Any: ...


class SqliteLimits:
    """rpm pacing and concurrency leases in the project database; one connection per thread (provider calls
    run in worker threads). The tables are created on first use. PostgresLimits runs the same statements."""
    PACE = "INSERT OR REPLACE INTO aqven_provider_pacing VALUES (?, ?)"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._ready = False
        self.writer = Writer(path)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            disk.refuse_outside(self.path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = _connect(self.path)
            self._local.conn = conn
            if not self._ready:
                for statement in schema.script(schema.LIMITS, "sqlite"):
                    _retry_locked(functools.partial(conn.execute, statement), self.path)
                self._ready = True
        return conn

    def _tx(self, fn: Callable[[Executes], T]) -> T:
        conn = self._conn()

        def run() -> T:
            conn.execute("BEGIN IMMEDIATE")
            self.writer.took()
            try:
                out = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return out
        return _retry_locked(run, self.path)

    def _now(self, db: Executes) -> float:
        """The clock the slots and leases are kept by (PostgreSQL: the server's, one for every machine)."""
        return time.time()

    def reserve(self, provider: str, spacing_s: float) -> float:
        def take(db: Executes) -> float:
            now = self._now(db)
            row = db.execute("SELECT next_at FROM aqven_provider_pacing WHERE provider = ?", (provider,)).fetchone()
            start: float = max(now, row[0]) if row else now
            db.execute(self.PACE, (provider, start + spacing_s))
            return self._here(start, now)
        return self._tx(take)

    def _here(self, at: float, now: float) -> float:
        """`at` of the store's clock (read as `now`) on this machine's, which the caller sleeps by."""
        return at

    def try_lease(self, scope: str, concurrency: int, lease_s: float) -> str | None:
        def take(db: Executes) -> str | None:
            now = self._now(db)
            db.execute("DELETE FROM aqven_provider_leases WHERE scope = ? AND expires_at < ?", (scope, now))
            held = db.execute("SELECT COUNT(*) FROM aqven_provider_leases WHERE scope = ?", (scope,)).fetchone()[0]
            if held >= concurrency:
                return None
            lease = f"{os.getpid()}-{uuid.uuid4().hex}"
            db.execute("INSERT INTO aqven_provider_leases VALUES (?, ?, ?)", (lease, scope, now + lease_s))
            return lease
        return self._tx(take)

    def release(self, lease: str) -> None:
        self._tx(lambda db: db.execute("DELETE FROM aqven_provider_leases WHERE lease_id = ?", (lease,)))
