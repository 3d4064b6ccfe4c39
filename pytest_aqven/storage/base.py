"""The three protocols every backend implements (`Transaction`, `Database`, `Limits`) and the record type they
carry, in a module of their own: the backends (sqlite.py, postgres.py) build on it and never import the package
that chooses between them."""
from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

Record = dict[str, Any]      # a series' or an attempt's record, stored as JSON


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
