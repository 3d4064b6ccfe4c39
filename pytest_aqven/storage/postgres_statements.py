"""Every statement pytest-aqven runs on PostgreSQL: SQLite's (sqlite_statements.py) with psycopg's placeholders
where the SQL of both dialects is the same, its own words where it is not (JSON records, upserts, counters)."""
from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Callable

import psycopg

from . import schema
from .sqlite_statements import OPEN, SqliteTransaction

if TYPE_CHECKING:
    from .base import Record


def one_row(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    """The row of a query that always returns one (an aggregate, RETURNING of a row that exists)."""
    row = cursor.fetchone()
    assert row is not None
    return row


class QMarks:
    """A psycopg connection that runs SQLite's statements: their ? placeholders are psycopg's %s."""

    def __init__(self, run: Callable[..., psycopg.Cursor[Any]]) -> None:
        self.run = run

    def execute(self, query: str, params: Any = ()) -> psycopg.Cursor[Any]:
        return self.run(query.replace("?", "%s"), params)


def _loads(text: str | None) -> Record:
    out: dict[str, Any] = json.loads(text or "{}")
    return out


class PostgresTransaction(SqliteTransaction):
    """Every statement pytest-aqven runs on PostgreSQL: SQLite's, with psycopg's placeholders, where the SQL
    of both dialects is the same; its own words below where it is not (JSON records, upserts, counters).
    `execute`: how a statement runs (a read's retries after a dropped connection; a transaction's plainly);
    `at`: the server's clock when the transaction took the writer's lock."""
    DIALECT = "postgresql"

    def __init__(self, conn: psycopg.Connection, execute: Callable[..., psycopg.Cursor[Any]] | None = None,
                 at: float | None = None) -> None:
        self.conn = conn
        self._at, self._since = at, time.monotonic()
        self.raw = conn     # type: ignore[assignment]  # the connection (SQLite's class names sqlite3's)
        run: Callable[..., Any] = QMarks(execute or conn.execute).execute     # typed as SQLite's
        self._x = run

    def now(self) -> float:
        if self._at is None:
            return float(one_row(self.conn.execute("SELECT extract(epoch FROM clock_timestamp())::float8"))[0])
        return self._at + (time.monotonic() - self._since)

    def _record(self, series_id: str) -> Record | None:
        row = self._x("SELECT record FROM aqven_series WHERE series_id = %s", (series_id,)).fetchone()
        return None if row is None else _loads(row[0])

    def _change(self, series_id: str, change: Callable[[Record], None], extra: str = "",
                params: tuple[Any, ...] = ()) -> bool:
        """The series' record changed by `change` (and `extra` columns set); False without the series."""
        record = self._record(series_id)
        if record is None:
            return False
        change(record)
        self._x(f"UPDATE aqven_series SET record = %s{extra} WHERE series_id = %s",
                (json.dumps(record), *params, series_id))
        return True

    def series_cap(self, series_id: str) -> tuple[str, Any] | None:
        row = self.series(series_id)
        return None if row is None else (row[0], row[1].get("cap_usd"))

    def series_ids(self, prefix: str = "") -> list[str]:
        return [r[0] for r in self._x("SELECT series_id FROM aqven_series WHERE starts_with(series_id, %s) "
                                      "ORDER BY created_at DESC", (prefix,))]

    def open_series_by_key(self, plan_key: str) -> list[tuple[str, str | None]]:
        return [(sid, _loads(record).get("run_token")) for sid, record in self._x(
            f"SELECT series_id, record FROM aqven_series WHERE plan_key = %s AND status IN {OPEN} "
            "ORDER BY created_at DESC", (plan_key,))]

    def open_series_joined(self, scope_key: str, plan_key: str, run: str) -> str | None:
        row = self._x(f"SELECT series_id FROM aqven_series WHERE status IN {OPEN} "
                      "AND record::jsonb ->> 'scope_key' = %s AND plan_key != %s "
                      "AND record::jsonb -> 'runs' @> jsonb_build_array(%s::text) ORDER BY created_at DESC",
                      (scope_key, plan_key, run)).fetchone()
        return row[0] if row else None

    def open_series_of(self, experiment_id: str, split: str, keep: str) -> list[tuple[str, Record, Record]]:
        rows = self._x(f"SELECT series_id, record FROM aqven_series WHERE experiment_id = %s AND split = %s "
                       f"AND status IN {OPEN} AND series_id != %s", (experiment_id, split, keep)).fetchall()
        out = []
        for sid, text in rows:
            record = _loads(text)
            out.append((sid, record.get("snapshot") or {}, record.get("fingerprints") or {}))
        return out

    def series_runs(self, series_id: str) -> list[str]:
        runs: list[str] = (self._record(series_id) or {}).get("runs") or []
        return runs

    def add_run(self, series_id: str, run: str) -> None:
        record = self._record(series_id)
        if record is not None and run not in (record.get("runs") or []):
            self._change(series_id, lambda r: r.__setitem__("runs", [*(r.get("runs") or []), run]))

    def adopt_series(self, series_id: str, plan_key: str, snapshot: Record, fingerprints: Record,
                     scope_key: str | None) -> None:
        self._change(series_id, lambda r: r.update(snapshot=snapshot, fingerprints=fingerprints, scope_key=scope_key),
                     ", plan_key = %s", (plan_key,))

    def set_closed(self, series_id: str, closed: list[Record]) -> None:
        self._change(series_id, lambda r: r.__setitem__("closed", closed))

    def cancel_series(self, series_id: str, verdict: Record, at: float) -> bool:
        if self.series_status(series_id) not in ("running", "awaiting_approval"):
            return False
        return self._change(series_id, lambda r: r.__setitem__("verdict", verdict),
                            ", status = 'cancelled', finished_at = %s", (at,))

    def pause_series(self, series_id: str, pause: Record) -> None:
        if self.series_status(series_id) == "running":
            self._change(series_id, lambda r: r.update(pause=pause, needs_approval=True),
                         ", status = 'awaiting_approval'")

    def set_cap(self, series_id: str, status: str, cap_usd: str, cap_from: Any, needs_approval: bool,
                pause: Record | None) -> None:
        self._change(series_id, lambda r: r.update(cap_usd=cap_usd, cap_from=cap_from, needs_approval=needs_approval,
                                                   pause=pause), ", status = %s", (status,))

    def resume_series(self, series_id: str) -> bool:
        if self.series_status(series_id) != "awaiting_approval":
            return False

        def resume(record: Record) -> None:
            record.pop("pause", None)
            record["needs_approval"] = False
        return self._change(series_id, resume, ", status = 'running'")

    def approve_series(self, series_id: str, cap_usd: str, approved_by: str, at: float) -> bool:
        if self.series_status(series_id) != "awaiting_approval":
            return False

        def approve(record: Record) -> None:
            record.pop("pause", None)
            record.update(cap_usd=cap_usd, approved_by=approved_by, approved_at=at, needs_approval=False)
        return self._change(series_id, approve, ", status = 'running'")

    def approval(self, series_id: str) -> tuple[str, Any, Any]:
        row = self.series(series_id)
        if row is None:
            raise LookupError(series_id)
        return row[0], row[1].get("cap_usd"), row[1].get("approved_by")

    SAVE_ATTEMPT = ("INSERT INTO aqven_series_attempts (attempt_id, series_id, variant_id, case_name, repeat, state, "
                    "outcome, cost_usd, check_cost_usd, started_at, finished_at, record) "
                    "VALUES (%s, %s, %s, %s, %s, 'finished', %s, %s, %s, %s, %s, %s) ON CONFLICT (attempt_id) DO "
                    "UPDATE SET series_id = excluded.series_id, variant_id = excluded.variant_id, "
                    "case_name = excluded.case_name, repeat = excluded.repeat, state = excluded.state, "
                    "outcome = excluded.outcome, cost_usd = excluded.cost_usd, "
                    "check_cost_usd = excluded.check_cost_usd, started_at = excluded.started_at, "
                    "finished_at = excluded.finished_at, record = excluded.record")

    def save_attempts(self, rows: list[tuple[Any, ...]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self.SAVE_ATTEMPT, rows)

    def add_runner(self, runner_id: str, host: str, pid: int, at: float) -> None:
        self._x("INSERT INTO aqven_runners VALUES (%s, %s, %s, %s, %s) ON CONFLICT (runner_id) DO UPDATE SET "
                "host = excluded.host, pid = excluded.pid, started_at = excluded.started_at, "
                "heartbeat_at = excluded.heartbeat_at", (runner_id, host, pid, at, at))

    def claim(self, attempt_id: str, series_id: str, runner_id: str, at: float, limit_usd: float) -> int:
        generation: int = one_row(self.conn.execute("UPDATE aqven_counters SET value = value + 1 WHERE name = 'claim_generation' "
                                       "RETURNING value"))[0]
        self._x("INSERT INTO aqven_claims (attempt_id, series_id, runner_id, state, claimed_at, limit_usd, "
                "generation) VALUES (%s, %s, %s, 'running', %s, %s, %s)",
                (attempt_id, series_id, runner_id, at, limit_usd, generation))
        return generation

    def ensure_findings(self) -> None:
        for statement in schema.script(schema.FINDINGS, "postgresql"):
            self._x(statement)

    def mark_published(self, series_ids: list[str], at: float) -> None:
        with self.conn.cursor() as cur:
            cur.executemany("UPDATE aqven_findings SET published_at = %s WHERE series_id = %s "
                            "AND published_at IS NULL", [(at, series_id) for series_id in series_ids])

    def add_findings_md(self, sha256: str, at: float) -> None:
        self._x("INSERT INTO aqven_findings_md (sha256, written_at) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (sha256, at))
