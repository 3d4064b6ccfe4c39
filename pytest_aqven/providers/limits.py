"""Provider `limits` (rpm, concurrency) shared by every process of a run, through the project database.

rpm spaces requests evenly: each request reserves the next free slot of its provider (one every 60/rpm
seconds) in one transaction and sleeps until it. concurrency holds leases (per provider and model);
a lease expires on its own, so a crashed process cannot hold a slot for ever.
The tables live in `.aqven/aqven.sqlite` beside the series tables; this module creates them itself.
"""
from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
import uuid
from contextlib import asynccontextmanager
from pathlib import Path

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS aqven_provider_pacing (provider TEXT PRIMARY KEY, next_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS aqven_provider_leases (lease_id TEXT PRIMARY KEY, scope TEXT NOT NULL, "
    "expires_at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS aqven_provider_leases_by_scope ON aqven_provider_leases (scope, expires_at)",
)
POLL_S = 0.05


class SharedLimiter:
    """rpm pacing and a concurrency cap for one provider, across processes."""

    def __init__(self, db_path: Path, provider: str, *, rpm: int | None, concurrency: int | None,
                 lease_s: float = 300.0):
        self.db_path = db_path
        self.provider = provider
        self.rpm = rpm
        self.concurrency = concurrency
        self.lease_s = lease_s
        self._local = threading.local()       # one connection per thread (calls run in worker threads)
        self._ready = False

    @property
    def active(self) -> bool:
        return bool(self.rpm or self.concurrency)

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.db_path, timeout=60, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
            if not self._ready:
                for statement in SCHEMA:
                    _retry_locked(lambda: conn.execute(statement))
                self._ready = True
        return conn

    def _tx(self, fn):
        conn = self._conn()

        def run():
            conn.execute("BEGIN IMMEDIATE")
            try:
                out = fn(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return out
        return _retry_locked(run)

    # --- rpm ------------------------------------------------------------------------------
    def reserve(self) -> float:
        """The wall-clock time this request may start at; the slot after it is taken for the next one."""
        spacing = 60.0 / self.rpm

        def take(db):
            now = time.time()
            row = db.execute("SELECT next_at FROM aqven_provider_pacing WHERE provider = ?", (self.provider,)).fetchone()
            start = max(now, row[0]) if row else now
            db.execute("INSERT OR REPLACE INTO aqven_provider_pacing VALUES (?, ?)", (self.provider, start + spacing))
            return start
        return self._tx(take)

    # --- concurrency ----------------------------------------------------------------------
    def try_lease(self, scope: str) -> str | None:
        def take(db):
            now = time.time()
            db.execute("DELETE FROM aqven_provider_leases WHERE scope = ? AND expires_at < ?", (scope, now))
            held = db.execute("SELECT COUNT(*) FROM aqven_provider_leases WHERE scope = ?", (scope,)).fetchone()[0]
            if held >= self.concurrency:
                return None
            lease = f"{os.getpid()}-{uuid.uuid4().hex}"
            db.execute("INSERT INTO aqven_provider_leases VALUES (?, ?, ?)", (lease, scope, now + self.lease_s))
            return lease
        return self._tx(take)

    def release(self, lease: str) -> None:
        self._tx(lambda db: db.execute("DELETE FROM aqven_provider_leases WHERE lease_id = ?", (lease,)))

    @asynccontextmanager
    async def slot(self, model: str):
        """Hold a concurrency lease (if limited) and start at the rpm slot (if paced)."""
        lease = None
        if self.concurrency:
            scope = f"{self.provider}:{model}"
            while (lease := await asyncio.to_thread(self.try_lease, scope)) is None:
                await asyncio.sleep(POLL_S)
        try:
            if self.rpm:
                start = await asyncio.to_thread(self.reserve)
                delay = start - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            yield
        finally:
            if lease is not None:
                await asyncio.to_thread(self.release, lease)


def _retry_locked(fn):
    """The busy handler does not cover every lock (e.g. schema changes): retry those ourselves."""
    for _ in range(600):
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            time.sleep(0.05)
    return fn()
