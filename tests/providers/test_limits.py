"""limits.rpm and limits.concurrency through the project database: two limiters on one database stand
for two processes (the -n 2 test in test_plugin_http.py runs real ones)."""
from __future__ import annotations

import asyncio
import time

import pytest

from pytest_aqven import storage
from pytest_aqven.providers.limits import SharedLimiter
from pytest_aqven.providers.openai_compat import OpenAICompatProvider

from .test_openai_compat import FAST, request


def test_rpm_slots_are_spaced_across_limiters_sharing_the_database(tmp_path):
    # 6 rpm: a slot every 10 s, far longer than a reservation takes even on a loaded machine (none sleeps)
    one, two = (SharedLimiter(storage.limits(tmp_path), "p", rpm=6, concurrency=None) for _ in range(2))
    starts = [(one if i % 2 else two).reserve() for i in range(6)]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(abs(g - 10.0) < 1e-6 for g in gaps), gaps
    other = SharedLimiter(storage.limits(tmp_path), "another_provider", rpm=6, concurrency=None)
    assert other.reserve() < starts[-1]         # each provider has its own pace


def test_concurrency_holds_across_limiters_sharing_the_database(server, tmp_path):
    server.script("m1", *["delay:0.3"] * 6)

    def provider():
        return OpenAICompatProvider(provider_id="local", base_url=server.url, api_key=None, catalog=None,
                                    retry=FAST, limiter=SharedLimiter(storage.limits(tmp_path), "local", rpm=None, concurrency=2))
    a, b = provider(), provider()

    async def go():
        return await asyncio.gather(*(p.complete(request()) for p in (a, b, a, b, a, b)))
    started = time.perf_counter()
    responses = asyncio.run(go())
    assert all(r.outcome == "ok" for r in responses)
    assert server.max_inflight == 2 and time.perf_counter() - started >= 0.9


@pytest.mark.slow
def test_a_lease_of_a_dead_process_expires(tmp_path):
    dead = SharedLimiter(storage.limits(tmp_path), "p", rpm=None, concurrency=1, lease_s=2.0)
    assert dead.try_lease("p:m") is not None        # never released
    alive = SharedLimiter(storage.limits(tmp_path), "p", rpm=None, concurrency=1)
    assert alive.try_lease("p:m") is None
    time.sleep(2.1)
    assert alive.try_lease("p:m") is not None
