"""The one schema definition of the project database, every table and its migrations, for both backends.

It is written in SQLite's words; `script(text, dialect)` renders it for PostgreSQL (the types whose names
differ: REAL is double precision there, an autoincrement key an identity; INSERT OR IGNORE is ON CONFLICT DO
NOTHING). The few statements no renaming makes portable are `Dialects(sqlite=..., postgresql=...)`: SQLite's
backfills of the rows an older release wrote (a PostgreSQL store has none: it starts with this release) and
the spend-total trigger, whose body each dialect states its own way.

Components and when they are created (as in every release, so a database of an older one opens unchanged):
- `series` (SERIES, then MIGRATIONS 2..LATEST): when a store opens; its version is kept in
  aqven_schema_versions, and a version above LATEST is refused (a newer pytest-aqven wrote it);
- `findings` (FINDINGS): by the first transaction that records or publishes a finding;
- `limits` (LIMITS): by the first provider call that paces or leases;
- `project` (PROJECT): by the first series a project opens in the store.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Iterator, Union


@dataclass(frozen=True)
class Dialects:
    """One statement in each dialect's words; None: the dialect has nothing to do there."""
    sqlite: str | None
    postgresql: str | None


Script = Union[str, tuple[Union[str, Dialects], ...]]

SERIES = """
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
SERIES_VERSION = 1

# version -> statements that bring the 'series' component from version - 1 to it (version 1 is SERIES)
MIGRATIONS: dict[int, Script] = {
    2: ("""
CREATE TABLE IF NOT EXISTS aqven_runners (
  runner_id TEXT PRIMARY KEY, host TEXT NOT NULL, pid INTEGER NOT NULL, started_at REAL NOT NULL,
  heartbeat_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS aqven_claims (
  attempt_id TEXT PRIMARY KEY,
  series_id TEXT NOT NULL,
  runner_id TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('running', 'finished')),
  claimed_at REAL NOT NULL,
  limit_usd REAL
);
CREATE INDEX IF NOT EXISTS aqven_claims_by_series ON aqven_claims (series_id, state);
CREATE TABLE IF NOT EXISTS aqven_spend (
  entry INTEGER PRIMARY KEY AUTOINCREMENT,
  series_id TEXT NOT NULL,
  attempt_id TEXT NOT NULL,
  runner_id TEXT,
  spend_usd REAL NOT NULL,
  unpriced_calls INTEGER NOT NULL DEFAULT 0,
  outcome TEXT,
  at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS aqven_spend_by_series ON aqven_spend (series_id);
""", Dialects(sqlite="""
INSERT INTO aqven_spend (series_id, attempt_id, spend_usd, unpriced_calls, outcome, at)
  SELECT series_id, attempt_id, CAST(cost_usd AS REAL) + CAST(check_cost_usd AS REAL),
         COALESCE(json_extract(record, '$.unpriced_calls'), 0), outcome, COALESCE(finished_at, 0)
  FROM aqven_series_attempts WHERE state = 'finished';
""", postgresql=None)),
    # the running spend total of each series, kept by a trigger in the transaction that inserts the spend
    # row (the ledger is append-only), so a start decision reads one row instead of summing every attempt
    3: ("""
CREATE TABLE IF NOT EXISTS aqven_spend_totals (
  series_id TEXT PRIMARY KEY,
  spent_usd REAL NOT NULL,
  reserve_usd REAL NOT NULL,
  finished INTEGER NOT NULL,
  unpriced_attempts INTEGER NOT NULL
);
""", Dialects(sqlite="""
INSERT OR REPLACE INTO aqven_spend_totals
  SELECT series_id, SUM(spend_usd), MAX(spend_usd), COUNT(*), SUM(unpriced_calls > 0) FROM aqven_spend GROUP BY series_id;
CREATE TRIGGER IF NOT EXISTS aqven_spend_total AFTER INSERT ON aqven_spend BEGIN
  INSERT INTO aqven_spend_totals VALUES (NEW.series_id, NEW.spend_usd, NEW.spend_usd, 1, NEW.unpriced_calls > 0)
  ON CONFLICT (series_id) DO UPDATE SET spent_usd = spent_usd + excluded.spent_usd,
    reserve_usd = MAX(reserve_usd, excluded.reserve_usd), finished = finished + 1,
    unpriced_attempts = unpriced_attempts + excluded.unpriced_attempts;
END;
""", postgresql="""
CREATE OR REPLACE FUNCTION aqven_spend_total() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  INSERT INTO aqven_spend_totals VALUES (NEW.series_id, NEW.spend_usd, NEW.spend_usd, 1, (NEW.unpriced_calls > 0)::int)
  ON CONFLICT (series_id) DO UPDATE SET spent_usd = aqven_spend_totals.spent_usd + excluded.spent_usd,
    reserve_usd = GREATEST(aqven_spend_totals.reserve_usd, excluded.reserve_usd),
    finished = aqven_spend_totals.finished + 1,
    unpriced_attempts = aqven_spend_totals.unpriced_attempts + excluded.unpriced_attempts;
  RETURN NULL;
END $$;
CREATE TRIGGER aqven_spend_total AFTER INSERT ON aqven_spend FOR EACH ROW EXECUTE FUNCTION aqven_spend_total();
""")),
    # fencing: each claim gets the next generation number; a finish counts only while its claim still holds
    # (same runner, same generation), checked in the finish's own transaction
    4: """
ALTER TABLE aqven_claims ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS aqven_counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO aqven_counters VALUES ('claim_generation', 0);
""",
}
LATEST = max(MIGRATIONS)

# aqven_findings_md: every FINDINGS.md text aqven wrote (a text not among them was made by hand: never overwritten)
FINDINGS = """
CREATE TABLE IF NOT EXISTS aqven_findings (
      series_id TEXT PRIMARY KEY REFERENCES aqven_series (series_id),
      experiment_id TEXT NOT NULL,
      plan_key TEXT NOT NULL,
      text TEXT NOT NULL,
      recorded_at REAL NOT NULL,
      published_at REAL);
CREATE TABLE IF NOT EXISTS aqven_findings_md (sha256 TEXT PRIMARY KEY, written_at REAL NOT NULL);
"""

# aqven_project: the project whose series the store holds, by its package (one database, one project), recorded
# by the first transaction that opens a series
PROJECT = """
CREATE TABLE IF NOT EXISTS aqven_project (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

LIMITS = """
CREATE TABLE IF NOT EXISTS aqven_provider_pacing (provider TEXT PRIMARY KEY, next_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS aqven_provider_leases (lease_id TEXT PRIMARY KEY, scope TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS aqven_provider_leases_by_scope ON aqven_provider_leases (scope, expires_at);
"""


_POSTGRESQL_WORDS = [
    (re.compile(r"\bINTEGER PRIMARY KEY AUTOINCREMENT\b"), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),        # PostgreSQL's real has 6 digits: times need 15
    (re.compile(r"^INSERT OR IGNORE INTO (.*);$", re.S), r"INSERT INTO \1 ON CONFLICT DO NOTHING;"),
]


def _split(text: str) -> Iterator[str]:
    """The statements of SQL text, one by one (a trigger's or a function's body has semicolons of its own)."""
    if "$$" in text:            # PostgreSQL's function bodies: whole statements end after the closing $$ ...;
        for piece in re.split(r"(?<=;)\s*\n(?=CREATE|INSERT|ALTER)", text.strip()):
            yield piece
        return
    pending = ""
    for piece in text.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                yield pending
            pending = ""


def script(text: Script, dialect: str) -> list[str]:
    """The statements of one piece of the definition, in `dialect` ('sqlite' or 'postgresql')."""
    parts = (text,) if isinstance(text, str) else text
    out: list[str] = []
    for part in parts:
        if isinstance(part, Dialects):
            chosen = getattr(part, dialect)
            out += [] if chosen is None else list(_split(chosen))
            continue
        for statement in _split(part):
            if dialect == "postgresql":
                for pattern, words in _POSTGRESQL_WORDS:
                    statement = pattern.sub(words, statement.strip())
            out.append(statement)
    return out
