"""The PostgreSQL backend (psycopg 3): one database that the runners of many machines share (CI shards, xdist
hosts, teammates), with the guarantees SQLite gives the processes of one machine.

A transaction takes a transaction-scoped advisory lock first (`pg_advisory_xact_lock`): one writer at a time
across every machine, as SQLite's BEGIN IMMEDIATE is across processes, so every ledger decision above (claims,
the spend cap, the one finding) reads and writes as the only writer. Reads run without it (each statement sees
what is committed). Records are JSON text, read and changed in Python under that lock, so their key order is
the one SQLite keeps.

A server that goes away mid-series: the connection is opened again, waiting up to AWAY_S, and a transaction the
cut interrupted raises Interrupted (rolled back: nothing of it was kept; a cut during COMMIT asks the server
whether it committed) so that `storage.rerun` runs it again as a whole. A server away longer than AWAY_S is
StoreAway, one message, for every store of the process at once."""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterator, TypeVar

import psycopg

from . import disk, schema
from .disk import RERUNS, Interrupted, StorageError, StoreAway
from .postgres_statements import PostgresTransaction, QMarks, one_row
from .sqlite import SqliteLimits

if TYPE_CHECKING:
    pass

WRITER_LOCK = 0x6171_7665_6E00      # 'aqven\0': the advisory lock key of the series' writer
LIMITS_LOCK = 0x6171_7665_6E01      # the provider limits' writer (tables of their own, a turn of their own)
CONNECT_TIMEOUT_S = 10
AWAY_S = 300.0          # how long a run waits for a server that went away mid-series before it stops
SETTINGS = "--aqven-store / aqven_store / AQVEN_STORE"     # where the store is set (storage.choose: the CLI's)
T = TypeVar("T")


def stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


SAY: Callable[[str], None] = stderr      # how a notice reaches the terminal now (storage.choose: past pytest's capture)
_reached = False        # this process had a connection: a server away from now on is waited for (not at the start)
_away: str | None = None    # the message once a server stayed away past AWAY_S: every store of the process stops


def where(url: str) -> str:
    """The server and database of a URL for messages, without its password."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the PostgreSQL store (its URL does not parse)"
    host = str(info.get("host") or "localhost")
    port = f":{info['port']}" if info.get("port") else ""
    return f"postgresql://{info.get('user') or ''}{'@' if info.get('user') else ''}{host}{port}/{info.get('dbname') or ''}"


def _last_line(exc: BaseException) -> str:
    """What libpq says went wrong, without the connection's preamble: 'No such file or directory', 'FATAL: ...'."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return " ".join(lines[0].rpartition("failed: ")[2].split()) if lines else type(exc).__name__


def _open(url: str) -> psycopg.Connection:
    """A connection whose waits are bounded: for the writer's lock disk.LOCK_WAIT_S (`lock_timeout`, then the run
    stops naming the holder: `stalled`); a session idle inside a transaction (its runner stopped: Ctrl-Z, a
    paused CI job) is ended by the server after half that, so the other runners go on without it. Its
    application_name names its runner (pid and host) for that message."""
    conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                           application_name=f"aqven {os.getpid()} {socket.gethostname()}"[:63])
    wait_ms = int(disk.LOCK_WAIT_S * 1000)
    conn.execute(f"SET lock_timeout = {wait_ms}")
    conn.execute(f"SET idle_in_transaction_session_timeout = {wait_ms // 2}")
    return conn


def stalled(conn: psycopg.Connection, key: int, location: str) -> disk.Stalled:
    """After lock_timeout on the advisory lock `key`, its transaction rolled back: who holds that lock."""
    row = conn.execute("SELECT a.application_name, a.pid, a.client_addr::text FROM pg_locks l JOIN pg_stat_activity "
                       "a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND "
                       "l.classid::bigint = %s AND l.objid::bigint = %s", (key >> 32, key & 0xFFFFFFFF)).fetchone()
    if row is None:
        return disk.stalled(location, "a session that has let go of it since")
    name, backend, address = row
    parts = (name or "").split()
    if len(parts) == 3 and parts[0] == "aqven" and parts[1].isdigit():
        return disk.stalled(location, f"{disk.holder(int(parts[1]), parts[2])}, server backend {backend}")
    return disk.stalled(location, f"server backend {backend} ({name or 'no application name'}, "
                                  f"from {address or 'a local socket'})")


def connect(url: str) -> psycopg.Connection:
    """A connection, or StorageError with what is wrong (unreachable, refused credentials) and what to do.
    In a process that was connected before, a server away is waited for (`reconnect`)."""
    global _reached
    if _reached:
        return reconnect(url)
    try:
        conn = _open(url)
    except psycopg.OperationalError as exc:
        text = _last_line(exc)
        if "password" in text or "authentication" in text:
            raise StorageError(f"pytest-aqven: the PostgreSQL store {where(url)} refused the credentials ({text}). "
                               f"Give the password through the environment (PGPASSWORD, or AQVEN_STORE / "
                               f"ref:env/NAME holding the URL); nothing was run.") from None
        raise StorageError(f"pytest-aqven: the PostgreSQL store {where(url)} cannot be reached ({text}). Start the "
                           f"server or fix {SETTINGS}; nothing was run.") from None
    except psycopg.ProgrammingError as exc:
        raise StorageError(f"pytest-aqven: the store URL is not a PostgreSQL connection string ({exc}); "
                           f"nothing was run.") from None
    _reached = True
    return conn


def away(location: str) -> str:
    return (f"pytest-aqven: the PostgreSQL store {location} was away for more than {AWAY_S:.0f} s, so the run stops "
            f"here. What was committed is kept: once the server is back, run the same command; it continues the "
            f"series (the attempts the outage cut short run again).")


def full(location: str, exc: psycopg.errors.DiskFull) -> disk.DiskFull:
    """The server's disk filled up (SQLSTATE 53100: 'could not extend file', 'No space left on device'): the run
    stops taking attempts, with this message."""
    return disk.DiskFull(f"pytest-aqven: the disk of the PostgreSQL store {location} is full ({_last_line(exc)}): the "
                         f"run stops here and takes no more attempts; what was committed is kept. Free space on the "
                         f"server's disk, then run the same command: it continues the series.")


def reconnect(url: str) -> psycopg.Connection:
    """A new connection to a server that may be away: waits up to AWAY_S for it (said once, at once: SAY), then
    StoreAway, at once for every later call of this process."""
    global _away
    if _away is not None:
        raise StoreAway(_away)
    deadline, said = time.monotonic() + AWAY_S, False
    while True:
        try:
            return _open(url)
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                _away = away(where(url))
                raise StoreAway(_away) from None
            if not said:
                SAY(f"pytest-aqven: the PostgreSQL store {where(url)} is away ({_last_line(exc)}); waiting up to "
                    f"{AWAY_S:.0f} s for it to return")
                said = True
            time.sleep(1.0)


def _version(conn: psycopg.Connection) -> int | None:
    """The series schema version of the database; None when it has no aqven tables yet."""
    if one_row(conn.execute("SELECT to_regclass('aqven_schema_versions')"))[0] is None:
        return None
    row = conn.execute("SELECT version FROM aqven_schema_versions WHERE component = 'series'").fetchone()
    return row[0] if row else None


def _newer(version: int, url: str) -> StorageError:
    return StorageError(f"pytest-aqven: the PostgreSQL store {where(url)} was migrated by a newer pytest-aqven "
                        f"(schema version {version}, this one knows {schema.LATEST}): upgrade pytest-aqven on "
                        f"this machine; nothing was changed.")


def migrate(conn: psycopg.Connection, url: str) -> tuple[int | None, int]:
    """Under the writer's lock: the tables created, every migration above the stored version applied.
    Returns (version before, version now)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
        before = _version(conn)
        if before is not None and before > schema.LATEST:
            raise _newer(before, url)
        if before is None:
            for statement in schema.script(schema.SERIES, "postgresql"):
                conn.execute(statement)
            conn.execute("INSERT INTO aqven_schema_versions VALUES ('series', %s)", (schema.SERIES_VERSION,))
        for target in range((before or schema.SERIES_VERSION) + 1, schema.LATEST + 1):
            for statement in schema.script(schema.MIGRATIONS[target], "postgresql"):
                conn.execute(statement)
            conn.execute("UPDATE aqven_schema_versions SET version = %s WHERE component = 'series'", (target,))
    return before, schema.LATEST


def cut(conn: psycopg.Connection, exc: BaseException) -> bool:
    """Whether `exc` says the connection was cut (the server went away, restarted or ended this backend: SQLSTATE
    class 08 or 57P; or 25P03, its runner was stopped inside a transaction past idle_in_transaction_session_timeout),
    so what ran on it since BEGIN did not happen; such a connection is closed, to be opened
    again. libpq may report a terminated backend before it marks the connection broken."""
    if not isinstance(exc, (psycopg.OperationalError, psycopg.errors.IdleInTransactionSessionTimeout)):
        return False
    if conn.broken or conn.closed or (exc.sqlstate or "").startswith(("08", "57P", "25P03")):
        conn.close()
        return True
    return False


def opened(url: str) -> tuple[psycopg.Connection, tuple[int | None, int]]:
    """A connection to the store with its schema made current, and `migrate`'s versions; a cut while migrating
    (one transaction) migrates again on a new connection."""
    for tries in range(RERUNS, -1, -1):
        conn = connect(url)
        try:
            return conn, migrate(conn, url)
        except psycopg.OperationalError as exc:
            if not cut(conn, exc):
                raise
            if not tries:
                raise StorageError(f"pytest-aqven: the PostgreSQL store {where(url)} cut the connection {RERUNS + 1} "
                                   f"times in a row while its schema was made current ({_last_line(exc)}); nothing "
                                   f"was run.") from None
    raise AssertionError("unreachable: the last try returns or raises")


def status(url: str) -> tuple[str, int | None]:
    """(where, schema version or None) of a reachable store; StorageError when it is not."""
    conn = connect(url)
    try:
        return where(url), _version(conn)
    finally:
        conn.close()


class PostgresDatabase:
    """One connection per store, shared by the threads of a process under one lock (as SQLite's)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = where(url)
        self._lock = threading.RLock()
        self._closed = False
        self._conn, _ = opened(url)

    def _live(self) -> psycopg.Connection:
        """The connection; one the server dropped is opened again (`reconnect`: the series goes on where it was)."""
        if self._closed:
            raise psycopg.OperationalError(f"the store {self.location} was closed")
        if self._conn.closed or self._conn.broken:
            self._conn = reconnect(self.url)
        return self._conn

    def _begun(self) -> tuple[psycopg.Connection, str, float]:
        """A connection inside BEGIN, holding the writer's lock, the transaction's id and the server's clock then.
        Nothing has run yet, so a connection found dropped here (the server restarted while idle) is opened again."""
        while True:
            conn = self._live()
            try:
                conn.execute("BEGIN")
                row = one_row(conn.execute("SELECT pg_advisory_xact_lock(%s)::text, pg_current_xact_id()::text, "
                                        "extract(epoch FROM clock_timestamp())::float8", (WRITER_LOCK,)))
                return conn, row[1], row[2]
            except psycopg.errors.LockNotAvailable:
                conn.execute("ROLLBACK")
                raise stalled(conn, WRITER_LOCK, self.location) from None
            except psycopg.OperationalError as exc:
                if not cut(conn, exc):
                    raise

    def _committed(self, xid: str) -> bool:
        """After a cut during COMMIT: whether the server committed the transaction (asked on a new connection;
        its old backend may still hold it a moment: still undecided after AWAY_S, the run stops rather than
        risk applying it twice)."""
        deadline = time.monotonic() + AWAY_S
        while True:
            state = self._read("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
            if state is None or state[0] != "in progress":
                return state is not None and state[0] == "committed"
            if time.monotonic() > deadline:
                raise StoreAway(away(self.location))
            time.sleep(0.1)

    def _read(self, query: Any, params: Any = None) -> psycopg.Cursor[Any]:
        """A read outside a transaction (a statement of its own): retried on a connection opened again."""
        try:
            return self._live().execute(query, params)
        except psycopg.OperationalError as exc:
            if not cut(self._conn, exc):
                raise
            return self._live().execute(query, params)

    @contextmanager
    def transaction(self) -> Iterator[PostgresTransaction]:
        """Interrupted when the connection is cut before the transaction commits: the server rolled it back."""
        with self._lock:
            conn, xid, at = self._begun()
            try:
                yield PostgresTransaction(conn, at=at)
            except BaseException as exc:
                if cut(conn, exc):
                    raise Interrupted(f"the connection to {self.location} was cut: {_last_line(exc)}") from exc
                if conn.closed or conn.broken:
                    raise
                try:
                    conn.execute("ROLLBACK")
                except psycopg.OperationalError as again:
                    if not cut(conn, again):
                        raise
                if isinstance(exc, psycopg.errors.DiskFull):
                    raise full(self.location, exc) from None
                raise
            try:
                conn.execute("COMMIT")
            except psycopg.OperationalError as exc:
                if isinstance(exc, psycopg.errors.DiskFull):
                    raise full(self.location, exc) from None
                if not cut(conn, exc):
                    raise
                if not self._committed(xid):
                    raise Interrupted(f"the connection to {self.location} was cut at COMMIT, which did not land") from exc

    @contextmanager
    def read(self) -> Iterator[PostgresTransaction]:
        with self._lock:
            yield PostgresTransaction(self._live(), execute=self._read)

    def close(self) -> None:
        self._closed = True
        self._conn.close()


@contextmanager
def peek(url: str) -> Iterator[PostgresTransaction | None]:
    """Read-only: None when the database has no aqven tables yet (nothing is created). A server away is
    psycopg.Error (storage.ERRORS), which the callers survive."""
    conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="aqven")
    try:
        conn.read_only = True
        yield PostgresTransaction(conn) if _version(conn) is not None else None
    finally:
        conn.close()


class PostgresLimits(SqliteLimits):
    """rpm pacing and concurrency leases in the shared database, by SQLite's statements and the server's clock
    (machines whose clocks differ still share one set of slots and leases): one connection (opened on first
    use, again after the server dropped it) for the threads of a process; each step is one short transaction,
    run again when a cut interrupts it (a lease whose COMMIT landed unseen expires after its lease_s)."""
    PACE = ("INSERT INTO aqven_provider_pacing VALUES (?, ?) ON CONFLICT (provider) DO UPDATE SET "
            "next_at = excluded.next_at")

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._link: psycopg.Connection | None = None

    def _connected(self) -> psycopg.Connection:
        if self._link is not None and not (self._link.closed or self._link.broken):
            return self._link
        self._link = conn = connect(self.url)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LIMITS_LOCK,))
            for statement in schema.script(schema.LIMITS, "postgresql"):
                conn.execute(statement)
        return conn

    def _tx(self, fn: Callable[[Any], T]) -> T:
        with self._lock:
            for tries in range(RERUNS, -1, -1):
                try:
                    conn = self._connected()
                    with conn.transaction():
                        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LIMITS_LOCK,))
                        return fn(QMarks(conn.execute))
                except psycopg.errors.LockNotAvailable:
                    raise stalled(conn, LIMITS_LOCK, where(self.url)) from None
                except psycopg.OperationalError as exc:
                    if self._link is None or not cut(self._link, exc) or not tries:
                        raise
            raise AssertionError("unreachable: the last try returns or raises")

    def _now(self, db: Any) -> float:
        return float(one_row(db.execute("SELECT extract(epoch FROM clock_timestamp())::float8"))[0])

    def _here(self, at: float, now: float) -> float:
        return time.time() + (at - now)
