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

SQLite (`sqlite.py`, its statements in `sqlite_statements.py`) is the embedded default. PostgreSQL
(`postgres.py` and `postgres_statements.py`, psycopg 3, the extra `pytest-aqven[postgres]`) implements the same
three protocols (`base.py`) on the tables of `schema.py` rendered in its dialect; `choose(url)` makes it the store
of this process (`--aqven-store`, ini `aqven_store`, `AQVEN_STORE`,
read by `store_setting`). The contract tests (tests/storage/) run on each backend by a parameter. This package imports nothing of
pytest-aqven: the providers (limits) and the series (store, ledger) both build on it.
"""
from __future__ import annotations

import functools
import os
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, ParamSpec, TypeVar

from . import disk
from .base import Database, Limits, Transaction
from .disk import RERUNS, Interrupted, StorageError, StoreAway, check_file, database_path, forget, preflight_findings
from .schema import LATEST

P = ParamSpec("P")
T = TypeVar("T")

ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, Interrupted, StoreAway)     # choose() adds psycopg.Error
ENV = "AQVEN_STORE"
_chosen: str | None = None      # the PostgreSQL URL of this process's store; None: SQLite in each project


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
