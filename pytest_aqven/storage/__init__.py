"""The project database behind one small interface; every SQL statement of pytest-aqven lives in this package.

- `database_path(root)`: where a project keeps its database (the one place it is defined);
- `open_database(root) -> Database`: a connection, its schema made current; `Database.transaction()` is one
  atomic unit of work (a writer at a time), `Database.read()` reads what is committed; both give a
  `Transaction`, whose typed methods are the only way the series, the ledger and the findings reach the data;
- `peek(root)`: a read-only look at a database that may not exist (None), which creates nothing;
- `limits(root) -> Limits`: the provider rate limits (rpm pacing, concurrency leases) shared by processes;
- `ERRORS`: what a backend raises when the database fails (a caller that survives it catches these).

SQLite (`sqlite.py`) is the embedded default. A server backend (PostgreSQL, issue 27) implements the same
three protocols, states the tables of `schema.py` in its dialect and is chosen by `open_database`; the
contract tests (tests/storage/) run on each backend by a parameter. This package imports nothing of
pytest-aqven: the providers (limits) and the series (store, ledger) both build on it.
"""
from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from .disk import StorageError, check_file, database_path, forget, preflight, preflight_findings

Record = dict[str, Any]      # a series' or an attempt's record, stored as JSON

ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error,)


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
    def series_runs(self, series_id: str) -> list[str]: ...
    def add_run(self, series_id: str, run: str) -> None: ...
    def set_closed(self, series_id: str, closed: list[Record]) -> None: ...
    def cancel_series(self, series_id: str, verdict: Record, at: float) -> bool:
        """a running or waiting series cancelled with this verdict; False when it was neither"""
    def pause_series(self, series_id: str, pause: Record) -> None:
        """a running series now awaits approval"""
    def set_cap(self, series_id: str, status: str, cap_usd: str, cap_from: Any, needs_approval: bool,
                pause: Record | None) -> None: ...
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
    def outcome_counts(self, series_id: str) -> list[tuple[str, int]]:
        """most frequent first"""
    def history(self, experiment_id: str, limit: int) -> list[Record]:
        """the latest decided series' records: at most `limit` per variant, by case name and repeat"""

    # --- ledger: runners, claims, spend ---------------------------------------------------------------
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
    def holds_claim(self, attempt_id: str, runner_id: str, generation: int) -> bool: ...
    def claim_standing(self, series_id: str, attempt_id: str, runner_id: str) -> tuple[str, int | None] | None:
        """(series status, generation of the runner's running claim or None); None without the series"""
    def record_finish(self, series_id: str, attempt_id: str, runner_id: str, spend_usd: float,
                      unpriced_calls: int, outcome: str, at: float, row: tuple[Any, ...]) -> None:
        """the spend row, the claim marked finished and the attempt saved (`row` as in save_attempts)"""

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


def open_database(root: Path) -> Database:
    from .sqlite import SqliteDatabase  # noqa: PLC0415
    return SqliteDatabase(database_path(root))


def peek(root: Path) -> AbstractContextManager[Transaction | None]:
    from .sqlite import peek as sqlite_peek  # noqa: PLC0415
    return sqlite_peek(database_path(root))


def limits(root: Path) -> Limits:
    from .sqlite import SqliteLimits  # noqa: PLC0415
    return SqliteLimits(database_path(root))


__all__ = ["ERRORS", "Database", "Limits", "StorageError", "Transaction", "check_file", "database_path", "forget",
           "limits", "open_database", "peek", "preflight", "preflight_findings"]
