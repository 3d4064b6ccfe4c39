"""Provider `limits` (rpm, concurrency) shared by every process of a run, through the project database.

rpm spaces requests evenly: each request reserves the next free slot of its provider (one every 60/rpm
seconds) in one transaction and sleeps until it. concurrency holds leases (per provider and model);
a lease expires on its own, so a crashed process cannot hold a slot for ever.
The slots and leases are kept by `storage.Limits` (tables beside the series tables, created on first use).
"""
from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator

from ..storage import Limits

POLL_S = 0.05


class SharedLimiter:
    """rpm pacing and a concurrency cap for one provider, across processes."""

    def __init__(self, shared: Limits, provider: str, *, rpm: int | None, concurrency: int | None,
                 lease_s: float = 300.0) -> None:
        self.shared = shared
        self.provider = provider
        self.rpm = rpm
        self.concurrency = concurrency
        self.lease_s = lease_s

    @property
    def active(self) -> bool:
        return bool(self.rpm or self.concurrency)

    # --- rpm ------------------------------------------------------------------------------
    def reserve(self) -> float:
        """The wall-clock time this request may start at; the slot after it is taken for the next one."""
        assert self.rpm, "only a provider with limits.rpm is paced"
        return self.shared.reserve(self.provider, 60.0 / self.rpm)

    # --- concurrency ----------------------------------------------------------------------
    def try_lease(self, scope: str) -> str | None:
        assert self.concurrency, "only a provider with limits.concurrency holds leases"
        return self.shared.try_lease(scope, self.concurrency, self.lease_s)

    def release(self, lease: str) -> None:
        self.shared.release(lease)

    @asynccontextmanager
    async def slot(self, model: str) -> AsyncIterator[None]:
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
