"""Every statement pytest-aqven runs on the project database, in SQLite's words (`SqliteTransaction`, the
statements sqlite.py runs; postgres_statements.py keeps them where PostgreSQL's words are the same)."""
from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from . import schema
from .clock import steady_now

if TYPE_CHECKING:      # the interface (the package) opens this backend: the alias is for annotations only
    from .base import Record

OPEN = "('running', 'awaiting_approval')"


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
