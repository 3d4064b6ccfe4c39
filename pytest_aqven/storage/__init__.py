"""The project database behind one small interface; every SQL statement of pytest-aqven lives in this package.

- `database_path(root)`: where a project keeps its database (the one place it is defined);
- `open_database(root) -> Database`: a connection, its schema made current; `Database.transaction()` is one
  atomic unit of work (a writer at a time), `Database.read()` reads what is committed; both give a
  `Transaction`, whose typed methods are the only way the series, the ledger and the findings reach the data;
- `peek(root)`: a read-only look at a database that may not exist (None), which creates nothing;
- `limits(root) -> Limits`: the provider rate limits (rpm pacing, concurrency leases) shared by processes;
- `ERRORS`: what a backend raises when the database fails (a caller that survives it catches these);
- `rerun`: a function whose one effect is a transaction runs again, as a whole, when the connection was cut
  before it committed (`Interrupted`); `StoreAway`: the server stayed away longer than the run waits.

SQLite (`sqlite.py`) is the embedded default. PostgreSQL (`postgres.py`, psycopg 3, the extra
`pytest-aqven[postgres]`) implements the same three protocols on the tables of `schema.py` rendered in its
dialect; `choose(url)` makes it the store of this process (`--aqven-store`, ini `aqven_store`, `AQVEN_STORE`,
read by `store_setting`). The contract tests (tests/storage/) run on each backend by a parameter. This package imports nothing of
pytest-aqven: the providers (limits) and the series (store, ledger) both build on it.
"""
from __future__ import annotations

import functools
import os
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable, ParamSpec, Protocol, TypeVar

from . import disk
from .disk import RERUNS, Interrupted, StorageError, StoreAway, check_file, database_path, forget, preflight_findings
from .schema import LATEST

Record = dict[str, Any]      # a series' or an attempt's record, stored as JSON
P = ParamSpec("P")
T = TypeVar("T")

ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, Interrupted, StoreAway)     # choose() adds psycopg.Error
ENV = "AQVEN_STORE"
_chosen: str | None = None      # the PostgreSQL URL of this process's store; None: SQLite in each project


class Transaction(Protocol):
    """One unit of work on the project database. Records are dicts (stored as JSON); times are epoch seconds."""

    # --- series ---------------------------------------------------------------------------------------
    def insert_series(self, series_id: str, experiment_id: str, flow_id: str | None, dataset_id: str,
                      split: str, question: str, status: str, plan_key: str, created_at: float,
                      record: Record) -> None: ...
    def series(self, series_id: str) -> tuple[str, Record, float, float | None] | None:
        """(status, record, created_at, finished_at)"""
    def series_status(self, series_id: str) -> str | None: ...
    def series_cap(self, series_id: str) -> tuple[str, Any] | None:
        """(status, record's cap_usd) without reading the whole record"""
    def series_question(self, series_id: str) -> str | None: ...
    def series_ids(self, prefix: str = "") -> list[str]:
        """newest first"""
    def open_series_by_key(self, plan_key: str) -> list[tuple[str, str | None]]:
        """(series_id, run_token) of the running or waiting series with this plan key, newest first"""
    def open_series_joined(self, scope_key: str, plan_key: str, run: str) -> str | None:
        """the newest open series of this scope and another plan key that the run `run` continues"""
    def open_series_of(self, experiment_id: str, split: str, keep: str) -> list[tuple[str, Record, Record]]:
        """(series_id, snapshot, fingerprints) of the other open series of the experiment and half"""
    def adopt_series(self, series_id: str, plan_key: str, snapshot: Record, fingerprints: Record,
                     scope_key: str | None) -> None:
        """an open series recorded by an older release continues under this one's plan key and input hashes"""
    def series_runs(self, series_id: str) -> list[str]: ...
    def add_run(self, series_id: str, run: str) -> None: ...
    def set_closed(self, series_id: str, closed: list[Record]) -> None: ...
    def cancel_series(self, series_id: str, verdict: Record, at: float) -> bool:
        """a running or waiting series cancelled with this verdict; False when it was neither"""
    def pause_series(self, series_id: str, pause: Record) -> None:
        """a running series now awaits approval"""
    def set_cap(self, series_id: str, status: str, cap_usd: str, cap_from: Any, needs_approval: bool,
                pause: Record | None) -> None: ...
    def resume_series(self, series_id: str) -> bool:
        """a series waiting on its pause runs again, the pause gone (not an approval); False when it was not waiting"""
    def approve_series(self, series_id: str, cap_usd: str, approved_by: str, at: float) -> bool:
        """a waiting series runs again under the cap; False when it was not waiting"""
    def approval(self, series_id: str) -> tuple[str, Any, Any]:
        """(status, cap_usd, approved_by)"""
    def finish_series(self, series_id: str, status: str, record: Record, at: float) -> None: ...

    # --- attempts -------------------------------------------------------------------------------------
    def save_attempts(self, rows: list[tuple[Any, ...]]) -> None:
        """finished attempts: (attempt_id, series_id, variant, case, repeat, outcome, cost_usd text,
        check_cost_usd text, started_at, finished_at, record JSON), replacing a row of the same id"""
    def finished_attempt(self, attempt_id: str) -> Record | None: ...
    def finished_attempts(self, series_id: str, *, case: str | None = None, variant: str | None = None,
                          repeat: int | None = None, by_finish: bool = False) -> list[Record]: ...
    def count_finished(self, series_id: str) -> int: ...
    def finished_keys(self, series_id: str) -> set[tuple[str, str, int]]:
        """(variant, case, repeat) of each finished attempt"""
    def outcome_counts(self, series_id: str) -> list[tuple[str, int]]:
        """most frequent first"""
    def history(self, experiment_id: str, limit: int) -> list[Record]:
        """the latest decided series' records: at most `limit` per variant, by case name and repeat"""

    # --- ledger: runners, claims, spend ---------------------------------------------------------------
    def now(self) -> float:
        """The store's clock, by which heartbeats and claims are judged: this machine's for SQLite, the
        server's for PostgreSQL (one clock for every machine: theirs may differ)."""
    def add_runner(self, runner_id: str, host: str, pid: int, at: float) -> None: ...
    def beat(self, runner_id: str, at: float) -> None: ...
    def runner(self, runner_id: str) -> tuple[str, int, float] | None:
        """(host, pid, heartbeat_at)"""
    def drop_runner(self, runner_id: str) -> None:
        """the runner and its running claims"""
    def spend_totals(self, series_id: str) -> tuple[float, float, int, int] | None:
        """(spent_usd, reserve_usd, finished, unpriced_attempts)"""
    def running_claims(self, series_id: str) -> list[tuple[str, int]]:
        """(runner_id, running claims)"""
    def attempt_claim(self, attempt_id: str) -> tuple[bool, str | None]:
        """(finished, the runner holding its claim)"""
    def drop_claim(self, attempt_id: str) -> None: ...
    def release_claim(self, attempt_id: str, runner_id: str) -> None:
        """the runner's claim, while it still runs"""
    def claim(self, attempt_id: str, series_id: str, runner_id: str, at: float, limit_usd: float) -> int:
        """a running claim with the next generation of the database; returns that generation"""
    def claim_standing(self, series_id: str, attempt_id: str, runner_id: str) -> tuple[str, int | None] | None:
        """(series status, generation of the runner's running claim or None); None without the series"""
    def record_finish(self, series_id: str, attempt_id: str, runner_id: str, spend_usd: float,
                      unpriced_calls: int, outcome: str, at: float, row: tuple[Any, ...], generation: int) -> bool:
        """the runner's running claim of `generation` marked finished, the spend row and the attempt saved (`row`
        as in save_attempts); False, and nothing written, when the runner no longer holds that claim"""

    # --- the project ----------------------------------------------------------------------------------
    def project(self) -> str | None:
        """the package of the project whose series the store holds (the table may not exist yet)"""
    def own_project(self, package: str) -> str:
        """the recorded package, this one when none was recorded yet (recorded now)"""

    # --- findings ---------------------------------------------------------------------------------------
    def ensure_findings(self) -> None: ...
    def finding(self, series_id: str) -> str | None: ...
    def insert_finding(self, series_id: str, experiment_id: str, text: str, at: float) -> None: ...
    def findings(self) -> list[tuple[str, str, str]]:
        """(series_id, experiment_id, text) by the time they were recorded"""
    def held_out_findings(self, experiment_id: str) -> list[tuple[str, Record, str]]:
        """(series_id, series record, text) of the experiment's series with a finding"""
    def has_open_held_out(self, experiment_id: str) -> bool: ...
    def unpublished_finding(self, plan_key: str) -> str | None: ...
    def mark_published(self, series_ids: list[str], at: float) -> None: ...
    def findings_md_shas(self) -> set[str]: ...
    def add_findings_md(self, sha256: str, at: float) -> None: ...


class Database(Protocol):
    location: str       # for messages: the file, or the server and database name

    def transaction(self) -> AbstractContextManager[Transaction]:
        """Atomic; one writer at a time across every process (and machine) sharing the database."""
    def read(self) -> AbstractContextManager[Transaction]:
        """What is committed, without taking the writer's turn."""
    def close(self) -> None: ...


class Limits(Protocol):
    def reserve(self, provider: str, spacing_s: float) -> float:
        """The time this request may start at; the slot `spacing_s` after it is taken for the next one."""
    def try_lease(self, scope: str, concurrency: int, lease_s: float) -> str | None:
        """A lease of `scope` when fewer than `concurrency` unexpired ones are held, else None."""
    def release(self, lease: str) -> None: ...


def rerun(fn: Callable[P, T]) -> Callable[P, T]:
    """For a function whose one effect is one store transaction: when the connection is cut before that
    transaction commits (Interrupted: nothing of it was kept), the function runs again as a whole, on the
    connection the store opens again (it waits up to postgres.AWAY_S for the server, then StoreAway)."""
    @functools.wraps(fn)
    def again(*args: P.args, **kwargs: P.kwargs) -> T:
        for _ in range(RERUNS):
            try:
                return fn(*args, **kwargs)
            except Interrupted:
                continue
        try:
            return fn(*args, **kwargs)
        except Interrupted as exc:
            raise StoreAway(f"pytest-aqven: {exc} (the {RERUNS + 1}th time in a row), so the run stops here. What "
                            f"was committed is kept: once the server holds its connections, run the same command; "
                            f"it continues the series.") from None
    return again


def store_setting(value: str | None, source: str) -> str | None:
    """The PostgreSQL URL a setting names (None or '': SQLite, the default). `ref:env/NAME` reads the URL from
    that environment variable. A password is taken from the environment only (the variable AQVEN_STORE, a
    `ref:env/` one, or libpq's PGPASSWORD): a URL with one in a file or on the command line is refused, so
    it never lands in a repository or a process list. Raises StorageError with the whole message."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.startswith("ref:env/"):
        name = value.removeprefix("ref:env/")
        if not os.environ.get(name):
            raise StorageError(f"pytest-aqven: {source} names the store ref:env/{name}, but the environment "
                               f"variable {name} is not set: set it to the PostgreSQL URL")
        return os.environ[name].strip()
    if not value.startswith(("postgresql://", "postgres://")):
        raise StorageError(f"pytest-aqven: {source} is not a PostgreSQL URL (postgresql://user@host/database): "
                           f"{value.split('@')[-1]!r}")
    if source != ENV and _has_password(value):
        raise StorageError(f"pytest-aqven: {source} holds a password: a password is read from the environment "
                           f"only. Remove it there and set PGPASSWORD, or put the whole URL in {ENV} or in a "
                           f"variable named by ref:env/NAME.")
    return value


def _has_password(url: str) -> bool:
    from urllib.parse import parse_qs, urlsplit  # noqa: PLC0415
    parts = urlsplit(url)
    return parts.password is not None or "password" in parse_qs(parts.query)


def choose(url: str | None, settings: str = "--aqven-store / aqven_store / AQVEN_STORE",
           say: Callable[[str], None] | None = None) -> None:
    """The store of this process from now on: a PostgreSQL URL, or None for SQLite in each project's .aqven/.
    `settings`: where a person sets the store (the server's messages name them: pytest's, or the CLI's);
    `say`: how a notice reaches the terminal now (a server away: the run waits), stderr by default."""
    global _chosen, ERRORS
    _chosen = url
    ERRORS = (sqlite3.Error, Interrupted, StoreAway)
    if url is not None:
        try:
            import psycopg  # noqa: PLC0415
        except ImportError:
            raise StorageError("pytest-aqven: a PostgreSQL store needs psycopg 3: pip install "
                               "'pytest-aqven[postgres]'") from None
        from . import postgres  # noqa: PLC0415
        postgres.SETTINGS = settings
        postgres.SAY = say or postgres.stderr
        ERRORS = (*ERRORS, psycopg.Error)


def chosen() -> str | None:
    return _chosen


def location(root: Path) -> str:
    """Where the series of `root` are, for messages (a server's URL without its password)."""
    if _chosen is None:
        return str(database_path(root))
    from .postgres import where  # noqa: PLC0415
    return where(_chosen)


def exists(root: Path) -> bool:
    """Whether the store may hold series of `root` (a server's database always may)."""
    return _chosen is not None or database_path(root).exists()


def open_database(root: Path) -> Database:
    if _chosen is not None:
        from .postgres import PostgresDatabase  # noqa: PLC0415
        return PostgresDatabase(_chosen)
    from .sqlite import SqliteDatabase  # noqa: PLC0415
    return SqliteDatabase(database_path(root))


def peek(root: Path) -> AbstractContextManager[Transaction | None]:
    if _chosen is not None:
        from .postgres import peek as postgres_peek  # noqa: PLC0415
        return postgres_peek(_chosen)
    from .sqlite import peek as sqlite_peek  # noqa: PLC0415
    return sqlite_peek(database_path(root))


def limits(root: Path) -> Limits:
    if _chosen is not None:
        from .postgres import PostgresLimits  # noqa: PLC0415
        return PostgresLimits(_chosen)
    from .sqlite import SqliteLimits  # noqa: PLC0415
    return SqliteLimits(database_path(root))


def migrate(root: Path) -> tuple[int | None, int]:
    """The store's schema made current: (version before, None for a new store; version now). StorageError when
    it cannot be reached or is newer than this release's."""
    if _chosen is not None:
        from . import postgres  # noqa: PLC0415
        conn, versions = postgres.opened(_chosen)
        conn.close()
        return versions
    from .sqlite import version  # noqa: PLC0415
    before = version(database_path(root))
    open_database(root).close()
    return before, LATEST


def file_version(path: Path) -> int | None:
    """The schema version of an SQLite database file (`aqven db check FILE`), None when it has none."""
    from .sqlite import version  # noqa: PLC0415
    return version(path)


def schema_version(root: Path) -> int | None:
    """The store's schema version, None when it has no tables yet; StorageError when it cannot be reached."""
    if _chosen is not None:
        from .postgres import status  # noqa: PLC0415
        return status(_chosen)[1]
    from .sqlite import version  # noqa: PLC0415
    return version(database_path(root))


def foreign(root: Path, recorded: str, package: str) -> StorageError:
    """One database holds one project: the message when it holds another's series."""
    return StorageError(
        f"pytest-aqven: the store {location(root)} holds the series of the project with package {recorded!r}, and "
        f"{root} is the project with package {package!r}: one database holds one project (its series, findings "
        f"and spent held-out cases would mix). Give this project its own store: a PostgreSQL database or schema "
        f"of its own (docs/scale.md), or, on SQLite, its own .aqven/ (not a copy of another project's); nothing "
        f"was run.")


def check_project(root: Path, package: str | None) -> None:
    """StorageError (`foreign`) when the store holds another project's series; creates nothing."""
    if not package:
        return
    try:
        with peek(root) as db:
            recorded = None if db is None else db.project()
    except ERRORS:      # no aqven_project table: no series opened since it came
        return
    if recorded is not None and recorded != package:
        raise foreign(root, recorded, package)


def preflight(root: Path, *, again: bool = False) -> None:
    """Before a series writes anything: the store can be written (StorageError with the one message if not).
    A server: reachable, the credentials taken, its schema not newer than this release's (made current)."""
    if _chosen is None:
        disk.preflight(root, again=again)
        from .sqlite import newer, version  # noqa: PLC0415
        found = version(database_path(root))
        if found is not None and found > LATEST:
            raise newer(database_path(root), found)
        return
    migrate(root)


__all__ = ["ENV", "ERRORS", "LATEST", "Database", "Interrupted", "Limits", "StorageError", "StoreAway", "Transaction",
           "check_file", "check_project", "choose", "chosen", "database_path", "exists", "file_version", "foreign", "forget", "limits", "location", "migrate",
           "open_database", "peek", "preflight", "preflight_findings", "rerun", "schema_version", "store_setting"]
