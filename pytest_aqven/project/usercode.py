"""Calling the user's code from the engine: in a worker thread or awaited, always with a time limit.

A hung synchronous function cannot be stopped from outside; its thread is abandoned (daemon, so it never
holds the interpreter at exit) and the attempt gets the infrastructure error `timeout`. A SystemExit or
KeyboardInterrupt raised BY user code is that call's error; a real Ctrl-C arrives in the main thread (or
as the cancellation asyncio.run makes of it) and is never caught here. `os._exit` and `os.fork` called BY
user code raise instead (`contained`): the one would end pytest silently, the other leave a copy of it
holding the database."""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import inspect
import os
import queue
import threading
import traceback
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Iterator, NoReturn

DEFAULT_TIMEOUT = 120.0          # seconds per user call, unless aqven.yaml or the node sets limits.seconds
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the pytest_aqven package
_LIBS = tuple(os.path.dirname(file) for file in (asyncio.__file__, threading.__file__) if file)


_IN_USER_CODE = contextvars.ContextVar("aqven_in_user_code", default=False)
_os_exit, _os_fork = os._exit, getattr(os, "fork", None)


def _exit(status: int) -> NoReturn:
    if _IN_USER_CODE.get():
        raise RuntimeError(f"os._exit({status}) was called: it would end pytest and every attempt with it. A node "
                           f"returns its output or raises an exception; its error is then the attempt's")
    _os_exit(status)


def _fork() -> int:
    if _IN_USER_CODE.get():
        raise RuntimeError("os.fork() was called: the copy would run pytest on and hold the project database. Run "
                           "another program with subprocess instead (or multiprocessing with the 'spawn' start "
                           "method)")
    assert _os_fork is not None
    return _os_fork()


def contained() -> None:
    """From now on os._exit and os.fork raise when user code calls them (in its worker thread, or in the task
    that awaits it), and do what they do for anyone else (pytest, xdist, execnet). Idempotent."""
    os._exit = _exit
    if _os_fork is not None:
        os.fork = _fork


class UserCallTimeout(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(f"did not return within {seconds:g} s")
        self.seconds = seconds


@dataclass
class UserCodeError(Exception):
    """An exception raised in user code, with where it was raised (the user's innermost frame)."""
    exc_type: str
    message: str
    location: str | None            # "file.py:12"
    traceback: str                  # the user's frames only, innermost last
    original: BaseException | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        text = f"{self.exc_type}: {self.message}" if self.message else self.exc_type
        return f"{text} at {self.location}" if self.location else text


def user_error(exc: BaseException) -> UserCodeError:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_user(f.filename)]
    where = f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else None
    short = "".join(traceback.format_list(frames[-5:])).rstrip()
    return UserCodeError(type(exc).__name__, str(exc), where, short, exc)


def _is_user(filename: str) -> bool:
    path = os.path.abspath(filename)
    return not (path.startswith(_OURS) or path.startswith(_LIBS) or "/concurrent/futures/" in path
                or filename.startswith("<frozen"))


QUICK_SECONDS = 0.005   # how long a loop with nothing else to wait for blocks on a thread's answer


class _Away(threading.local):
    def __init__(self) -> None:
        self.tasks: dict[Any, int] = {}    # this thread's event loop: task -> its outside waits in progress


_away = _Away()


@contextmanager
def away() -> Iterator[None]:
    """Around every wait of the event loop for something outside it (a thread, a server, a database)."""
    tasks, task = _away.tasks, asyncio.current_task()
    tasks[task] = tasks.get(task, 0) + 1
    try:
        yield
    finally:
        if tasks[task] == 1:
            del tasks[task]
        else:
            tasks[task] -= 1


async def waiting(awaitable: Awaitable) -> Any:
    """Await something that waits outside the loop (a server's pipes) as away() does."""
    with away():
        return await awaitable


def alone() -> bool:
    """No other task of this loop waits for something outside it: blocking the loop a moment delays nobody."""
    tasks = _away.tasks
    return len(tasks) <= 1 and (not tasks or asyncio.current_task() in tasks)


async def settled(future: concurrent.futures.Future, quick: float = QUICK_SECONDS) -> Any:
    """The result of work handed to another thread. Waking an event loop from a thread costs several times
    a thread's plain handoff (its self-pipe and a turn of the loop), more than a short call takes; so when
    nothing else on this loop waits, the loop first blocks up to `quick` seconds for the answer, then awaits
    it as usual (a time limit around this await still holds, `quick` later at most)."""
    with away():
        if quick and alone():
            try:
                return future.result(timeout=quick)
            except concurrent.futures.TimeoutError:
                pass
        return await asyncio.wrap_future(future)


class _DaemonThreads:
    """A small pool of daemon threads that grows when all are busy; a hung job just keeps its thread.

    An idle thread leaves a token in `_idle` (a deque: append and pop are atomic, no lock), and a job takes one
    or asks for a thread. A lock here made the event loop wait for a worker that held it while it waited for the
    GIL: about 6% of the attempts' loop at 100 in flight. New threads are started by a thread of the pool's own
    (`_spawner`): `Thread.start` waits until the new thread holds the GIL, up to a switch interval, and a wave
    of 100 attempts' first calls starting their threads from the attempts' loop stalled it 0.5 s."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._idle: collections.deque = collections.deque()
        self._wanted: queue.SimpleQueue = queue.SimpleQueue()      # one entry per thread to start
        self._spawner: threading.Thread | None = None
        self._spawner_lock = threading.Lock()

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._put(future, fn)
        return future

    def run(self, fn: Callable[[], Any]) -> asyncio.Future:
        """`fn()` in a worker, for the running loop: an asyncio future the worker settles with one call into the
        loop, where `submit` and `wrap_future` chain a second future to it (its lock, its condition, two
        callbacks): 5 to 7% of the attempts' loop at 100 in flight."""
        future = asyncio.get_running_loop().create_future()
        self._put(future, fn)
        return future

    def _put(self, future: concurrent.futures.Future | asyncio.Future, fn: Callable[[], Any]) -> None:
        self._jobs.put((future, contextvars.copy_context(), fn))
        try:
            self._idle.pop()
        except IndexError:          # every thread is busy (or hung): one more, so this job never waits for them
            self._wanted.put(None)
            if self._spawner is None:
                self._start_spawner()

    def _start_spawner(self) -> None:
        with self._spawner_lock:
            if self._spawner is None:
                self._spawner = threading.Thread(target=self._spawn, name="aqven-spawner", daemon=True)
                self._spawner.start()

    def _spawn(self) -> None:
        while True:
            self._wanted.get()
            threading.Thread(target=self._work, name="aqven-user-code", daemon=True).start()

    def _work(self) -> None:
        while True:
            future, ctx, fn = self._jobs.get()
            if isinstance(future, asyncio.Future):
                self._run_for_loop(future, ctx, fn)
            elif not future.set_running_or_notify_cancel():
                self._idle.append(None)
            else:
                try:
                    result = ctx.run(fn)
                except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt of user code included
                    self._idle.append(None)       # idle before the answer: the caller's next job finds this thread
                    future.set_exception(_Raised(exc))
                else:
                    self._idle.append(None)
                    future.set_result(result)
                result = None            # the answer goes with the job, not kept by an idle thread
            del future, ctx, fn

    def _run_for_loop(self, future: asyncio.Future, ctx: contextvars.Context, fn: Callable[[], Any]) -> None:
        if future.cancelled():           # its wait ended (a time limit) before it started: it never runs
            self._idle.append(None)
            return
        try:
            result, error = ctx.run(fn), None
        except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt of user code included
            result, error = None, _Raised(exc)
        self._idle.append(None)
        try:
            future.get_loop().call_soon_threadsafe(_settle, future, result, error)
        except RuntimeError:             # the loop closed: nobody waits for the answer
            pass


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    """On the loop: a worker's answer, unless its wait ended meanwhile."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class _Raised(Exception):
    """Carries a BaseException across the future (a bare SystemExit there would stop the event loop)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


_threads = _DaemonThreads()    # process-wide infrastructure, shared by every attempt (holds no attempt state)


async def in_thread(fn: Callable[[], Any]) -> Any:
    """`fn()` in a worker thread of the pool: settled()'s quick wait when nothing else on this loop waits, else
    the pool's asyncio future (raises _Raised with what fn raised)."""
    if alone():
        return await settled(_threads.submit(fn))
    with away():
        return await _threads.run(fn)


_ASYNC: weakref.WeakKeyDictionary[Callable, bool] = weakref.WeakKeyDictionary()


def is_async(fn: Callable) -> bool:
    """Whether `fn` is awaited; asked once per function (inspect's checks at every call of every attempt)."""
    try:
        return _ASYNC[fn]
    except KeyError:
        pass
    except TypeError:                 # unhashable, or no weak reference to it: asked each time
        return _is_async(fn)
    known = _ASYNC[fn] = _is_async(fn)
    return known


def _is_async(fn: Callable) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004  (its method)


async def call(fn: Callable, *args: Any, timeout: float | None = DEFAULT_TIMEOUT, **kwargs: Any) -> Any:
    """Run `fn(*args, **kwargs)`: awaited when async, else in a worker thread; limited to `timeout` seconds.

    Raises UserCallTimeout or UserCodeError; never lets the user's SystemExit/KeyboardInterrupt through."""
    contained()
    inside = _IN_USER_CODE.set(True)       # copied into the worker thread's context, or this task's own
    try:
        return await _call(fn, *args, timeout=timeout, **kwargs)
    finally:
        _IN_USER_CODE.reset(inside)


async def _call(fn: Callable, *args: Any, timeout: float | None, **kwargs: Any) -> Any:
    try:
        async with asyncio.timeout(timeout):
            if is_async(fn):
                try:
                    with away():
                        return await fn(*args, **kwargs)
                except (asyncio.CancelledError, UserCallTimeout):
                    raise
                except BaseException as exc:  # noqa: BLE001 - contained: it is the user's, not a Ctrl-C
                    raise user_error(exc) from None
            try:
                value = await in_thread(lambda: fn(*args, **kwargs))
            except _Raised as raised:
                raise user_error(raised.error) from None
            if inspect.isawaitable(value):      # a sync callable that returned a coroutine
                try:
                    return await value
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:  # noqa: BLE001
                    raise user_error(exc) from None
            return value
    except TimeoutError:
        if timeout is None:               # not the limit's (there is none): not a timeout of the call
            raise
        raise UserCallTimeout(timeout) from None
