"""The daemon threads that run the user's synchronous code: reused when idle, grown when all are busy."""
from __future__ import annotations

import asyncio
import threading

from pytest_aqven.project import usercode


def _workers() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.name == "aqven-user-code"}


def test_sequential_calls_reuse_the_idle_threads():
    before = _workers()

    async def main():
        return [await usercode.call(threading.get_ident) for _ in range(50)]
    idents = asyncio.run(main())
    # a thread is idle again before its caller sees the answer: one thread at most is added (none was idle)
    assert set(idents) <= _workers() and len(_workers() - before) <= 1


def test_a_hung_call_keeps_its_thread_and_the_next_call_gets_another():
    release, started = threading.Event(), []

    def hang():
        started.append(threading.get_ident())
        release.wait(10)
        return threading.get_ident()

    async def main():
        hung = asyncio.ensure_future(usercode.call(hang))
        while not started:
            await asyncio.sleep(0.01)
        other = await usercode.call(threading.get_ident, timeout=5)   # would wait 10 s if no thread were added
        release.set()
        return await hung, other
    try:
        hung, other = asyncio.run(main())
    finally:
        release.set()
    assert hung == started[0] and other != hung


def test_many_calls_at_once_from_many_threads_all_finish():
    barrier = threading.Barrier(40)

    def job(n):
        barrier.wait(timeout=10)          # every job in a thread of its own at once: the pool must grow to 40
        return n * 2

    async def main():
        return await asyncio.gather(*(usercode.call(job, n, timeout=20) for n in range(40)))
    results: list = []
    outer = [threading.Thread(target=lambda: results.append(asyncio.run(main())))]
    for t in outer:
        t.start()
    for t in outer:
        t.join(timeout=30)
    assert results == [[n * 2 for n in range(40)]]


def test_calls_beside_other_waits_are_answered_through_the_loop(monkeypatch):
    """Not alone on its loop, a call's answer comes back with one call into the loop (no concurrent future):
    its result, the user's exception (SystemExit too, as the call's error), and its time limit."""
    import time

    import pytest

    def not_this_way(fn):
        raise AssertionError("a call beside other waits went through a concurrent.futures.Future")
    monkeypatch.setattr(usercode._threads, "submit", not_this_way)

    def boom():
        raise ValueError("no")

    def leave():
        raise SystemExit(3)

    async def main():
        other = asyncio.ensure_future(usercode.waiting(asyncio.sleep(5)))     # another task waits outside
        await asyncio.sleep(0)
        try:
            assert await usercode.call(lambda a, b: a + b, 2, 5) == 7
            with pytest.raises(usercode.UserCodeError, match="ValueError: no"):
                await usercode.call(boom)
            with pytest.raises(usercode.UserCodeError, match="SystemExit"):
                await usercode.call(leave)
            with pytest.raises(usercode.UserCallTimeout):
                await usercode.call(time.sleep, 0.5, timeout=0.05)
            return await asyncio.gather(*(usercode.call(lambda n=n: n * n) for n in range(30)))
        finally:
            other.cancel()
    assert asyncio.run(main()) == [n * n for n in range(30)]


def test_whether_a_callable_is_awaited_is_asked_once_per_function_and_right_for_every_kind():
    import gc
    import weakref

    def plain(): return threading.get_ident()

    async def coroutine(): return "awaited"

    class Slotted:                  # no weak reference to it: asked each time
        __slots__ = ()

        async def __call__(self): return "awaited"

    class Unhashable:
        __eq__ = object.__eq__      # __eq__ without __hash__: unhashable
        __hash__ = None             # type: ignore[assignment]

        async def __call__(self): return "awaited"

    async def main():
        return [await usercode.call(fn) for fn in (plain, coroutine, Slotted(), Unhashable(), coroutine, plain)]
    ident, *awaited, again, other = asyncio.run(main())
    assert ident != threading.get_ident() and other != threading.get_ident()    # sync code: a worker thread
    assert awaited == ["awaited"] * 3 and again == "awaited"
    assert usercode._ASYNC[plain] is False and usercode._ASYNC[coroutine] is True

    def gone(): pass
    usercode.is_async(gone)
    assert gone in usercode._ASYNC
    ref = weakref.ref(gone)
    del gone
    gc.collect()
    # the answer does not keep a function of a project alive (a count of the table's entries would also see
    # other tests' functions the same collection frees)
    assert ref() is None


def test_a_busy_pool_grows_from_its_own_thread_not_the_callers(monkeypatch):
    """`Thread.start` waits until the new thread holds the GIL: the pool's threads are started by its spawner,
    never by the event loop that hands a job over (a wave of 100 first calls stalled the attempts' loop)."""
    starters: list[str] = []
    start = threading.Thread.start

    def recording_start(thread):
        if thread.name == "aqven-user-code":
            starters.append(threading.current_thread().name)
        return start(thread)
    monkeypatch.setattr(threading.Thread, "start", recording_start)
    monkeypatch.setattr(usercode, "_threads", usercode._DaemonThreads())     # no idle thread of earlier tests
    barrier = threading.Barrier(12)

    def job(n):
        barrier.wait(timeout=10)          # all twelve busy at once: the pool must have twelve threads
        return n

    async def main():
        return await asyncio.gather(*(usercode.call(job, n, timeout=20) for n in range(12)))
    results: list = []
    loop_thread = threading.Thread(target=lambda: results.append(asyncio.run(main())), name="the-loop")
    loop_thread.start()
    loop_thread.join(timeout=30)
    assert results == [list(range(12))]
    assert len(starters) >= 12 and set(starters) == {"aqven-spawner"}
