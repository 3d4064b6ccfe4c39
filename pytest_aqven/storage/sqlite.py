"""The SQLite backend: the project database `.aqven/aqven.sqlite`, shared by every process of one machine.

A transaction is BEGIN IMMEDIATE (one writer at a time across processes, others wait up to 60 s); the file
is in WAL mode, so readers never wait for the writer and a killed process loses nothing committed."""
from __future__ import annotations

import functools
import os
import socket
import sqlite3
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol, TypeVar

from . import disk, schema
from .disk import StorageError
from .sqlite_statements import SqliteTransaction

if TYPE_CHECKING:      # the interface (the package) opens this backend: the alias is for annotations only
    pass

BUSY_MS = 60000      # a read-only look's wait (a writer's is disk.LOCK_WAIT_S)
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
