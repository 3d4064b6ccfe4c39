"""One attempt scheduler per process: attempts run on one asyncio event loop in a background thread.

The pytest layer stays synchronous: an attempt item asks for its record and blocks until it is ready, while
the scheduler runs ahead on the items this process will run next (up to `concurrency` attempts in flight).
Every start goes through the spend ledger; every database call runs on one database thread, and the claims
queued while it was busy go in one transaction with one wake-up of the loop; finishes are group-committed."""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..codes import LedgerKind, SchedulerKind
from ..project import usercode
from ..providers.base import CALLS_IN_FLIGHT, ProviderError
from ..record import AttemptRecord
from . import interrupts
from .db import HeldOutTaken, Store
from .ledger import CLAIMED_ELSEWHERE, FIRST_ALONE, PROVIDER_UNUSABLE, Decision, Ledger, cancel, halt_text

if TYPE_CHECKING:
    from ..project.specs import CaseSpec
    from ..providers.base import ModelRequest, ModelResponse, Provider
    from .lifecycle import SeriesRun

POLL_SECONDS = 0.05
HEARTBEAT_SECONDS = 5.0
AHEAD_SECONDS = 2 * HEARTBEAT_SECONDS    # a claim made ahead and not started by then is given back (see _heartbeat)


@dataclass
class AttemptTurn:
    """What became of an attempt the scheduler was asked to run: its record where it ran or was reused, else why."""
    kind: SchedulerKind
    record: AttemptRecord | None = None
    why: str = ""


class Budget:
    """The hard spend limit of one attempt: a call is refused once the attempt spent its limit. It also keeps
    the first permanent provider error the attempt met (`unusable`), whatever the flow made of it."""

    def __init__(self, limit_usd: float | None) -> None:
        self.limit = limit_usd
        self.spent = 0.0
        self.unusable: dict | None = None     # provider, model, error, fix (ProviderError.fix)

    def before(self) -> None:
        if self.limit is not None and self.spent >= self.limit:
            raise ProviderError("budget_exceeded", f"the attempt spent ${self.spent:.4f}, its hard limit is "
                                                   f"${self.limit:.4f} of the series cap")

    async def before_input(self, request: ModelRequest, input_cost: Callable[[ModelRequest, float], Awaitable[float | None]]) -> None:
        """A call whose input alone would pass what is left of the limit, at the model's known price
        (`input_cost`, the provider's lower bound), is refused before it is sent."""
        if self.limit is None:
            return
        left = self.limit - self.spent
        cost = await input_cost(request, left)
        if cost is not None and cost > left:
            raise ProviderError("budget_exceeded", f"the call's input alone would cost at least ${cost:.4f} at "
                                                   f"{request.model}'s price, more than the ${left:.4f} left of the "
                                                   f"attempt's hard limit: refused before it was sent")

    def add(self, response: ModelResponse) -> Any:
        self.spent += getattr(response, "cost_usd", None) or 0.0
        return response


class BudgetGuard:
    """Wraps a provider for one attempt: refuses a call once the attempt spent its limit, or when its input
    alone would pass it (providers that know their prices: input_cost). Notes a permanent error of the call
    (ProviderError.fix) on the budget, even one a container policy goes on to absorb."""

    def __init__(self, inner: Provider, budget: Budget, provider_id: str = "") -> None:
        self.inner = inner
        self.budget = budget
        self.provider_id = provider_id

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.budget.before()
        input_cost = getattr(self.inner, "input_cost", None)
        if input_cost is not None:
            await self.budget.before_input(request, input_cost)
        try:
            response = await self.inner.complete(request)
        except ProviderError as exc:
            if exc.fix is not None and self.budget.unusable is None:
                error = (exc.public or exc.code).removeprefix(f"provider {self.provider_id}: ")
                self.budget.unusable = {"provider": self.provider_id, "model": request.model,
                                        "error": error.removeprefix(f"{self.provider_id}: "), "fix": exc.fix}
            raise
        return self.budget.add(response)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Unbuilt:
    """A provider that could not be built for a permanent reason (no key): each call raises its
    ProviderError, through the BudgetGuard that notes it."""

    def __init__(self, error: ProviderError) -> None:
        self.error = error

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise self.error


class DatabaseThread:
    """The attempts' database calls, on one thread. The ledger operations queued from the loop while it is busy
    go in one transaction per database, with one call into the loop to hand every answer back."""

    def __init__(self, loop: asyncio.AbstractEventLoop, batched: bool) -> None:
        self.loop = loop                # the attempts' loop, whose operations join batches when `batched`
        self.batched = batched
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aqven-db")
        self.ledgers: dict[Path, Ledger] = {}
        self.inline: asyncio.AbstractEventLoop | None = None    # run_here's loop: its calls are made inline
        # (root, operation, future): the next ledger batch. A deque and a flag, no lock: the loop waited for the
        # database thread holding one while that thread waited for the GIL
        self._ops: collections.deque[tuple] = collections.deque()
        self._draining = False                                # the database thread is taking batches

    def call(self, fn: Callable[[], Any]) -> Any:
        return self.pool.submit(fn).result()

    def close(self) -> None:
        self.pool.shutdown(wait=True)

    def ledger(self, root: Path) -> Ledger:
        """Only on the database thread (or in run_here's thread: the store serializes transactions)."""
        if root not in self.ledgers:
            self.ledgers[root] = Ledger(Store(root))
        return self.ledgers[root]

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.inline is not None and asyncio.get_running_loop() is self.inline:
            return fn(*args)        # run_here: this thread is the only one running attempts
        return await usercode.settled(self.pool.submit(fn, *args))    # blocks a moment when nothing else waits

    async def op(self, root: Path, *op: Any) -> Any:
        """One ledger operation (Ledger.batch), in the next batch of the database thread."""
        if not self.batched or asyncio.get_running_loop() is not self.loop:
            # no batch to join (the loop blocks a moment instead of a wake-up), or not on the attempts' loop
            result = await self.run(lambda: self.ledger(root).batch([op])[0])
        else:
            future = asyncio.get_running_loop().create_future()
            self._ops.append((root, op, future))      # before the flag is read: a drain ending now sees it
            if not self._draining:
                self._draining = True
                self.pool.submit(self._drain)
            with usercode.away():
                result = await future
        if isinstance(result, Exception):
            raise result
        return result

    def _drain(self) -> None:
        """On the database thread: each batch queued meanwhile in one transaction per database, then one
        call into the loop to hand every answer back."""
        while True:
            ops = []
            while self._ops:
                ops.append(self._ops.popleft())
            if not ops:
                self._draining = False
                if not self._ops:      # else one came before the flag fell (a second drain may run too: harmless)
                    return
                self._draining = True
                continue
            per_root: dict[Path, list[tuple]] = {}
            for root, op, future in ops:
                per_root.setdefault(root, []).append((op, future))
            answers: list[tuple] = []
            for root, items in per_root.items():
                try:
                    results = self.ledger(root).batch([op for op, _ in items])
                except Exception as exc:  # noqa: BLE001 - the ledger could not open: every operation says so
                    results = [exc] * len(items)
                answers += zip((future for _, future in items), results)
            try:
                self.loop.call_soon_threadsafe(_answer, answers)
            except RuntimeError:        # the loop closed: nobody waits for them
                pass


class Scheduler:
    claim_ahead = 15        # run_here: with an attempt's claim, the claims of the next 15 (a transaction per 16)

    def __init__(self, concurrency: int = 1) -> None:
        self.concurrency = max(1, concurrency)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="aqven-attempts", daemon=True)
        self.thread.start()
        self.database = DatabaseThread(self.loop, batched=self.concurrency > 1)
        self.slots = asyncio.Semaphore(self.concurrency)      # bound to self.loop on first use (3.10+)
        self.jobs: dict[tuple, concurrent.futures.Future] = {}
        self.running: set[tuple] = set()
        self.held_elsewhere: set[tuple] = set()               # jobs waiting for an attempt another runner claimed
        # attempts run_here claimed ahead, not started yet: key -> (decision, when claimed, root, series id)
        self.claimed: dict[tuple, tuple[Decision, float, Path, str]] = {}
        self._claimed_lock = threading.Lock()                 # the heartbeat gives back what _decide did not start
        self.series: dict[str, Path] = {}                     # series id -> root, every series this process touched
        self.runs: dict[int, SeriesRun] = {}                  # the series runs of this process: their stores close with it
        self.series_ids: dict[int, str] = {}                  # id(run) -> its series id
        self.stopping = False
        self._finished = asyncio.Event()                      # set and renewed at each attempt this process finishes
        # concurrency 1: each attempt runs in the pytest thread (run_here), until another runner shares a series
        self.inline = self.concurrency == 1
        self._beat = asyncio.run_coroutine_threadsafe(self._heartbeat(), self.loop)

    # --- from the pytest thread ---------------------------------------------------------------
    def submit(self, run: SeriesRun, variant: str, case: CaseSpec, repeat: int) -> concurrent.futures.Future:
        """Idempotent: the same attempt is scheduled once per process."""
        key = (id(run), variant, case.name, repeat)
        fut = self.jobs.get(key)
        if fut is None:
            fut = asyncio.run_coroutine_threadsafe(self._job(key, run, variant, case, repeat), self.loop)
            self.jobs[key] = fut
        return fut

    def submit_many(self, attempts: list[tuple]) -> None:
        """`submit` for each (run, variant, case, repeat), with one wake-up of the loop for all of them (each
        wake-up is a write to the loop's pipe and a thread switch)."""
        new = []
        for run, variant, case, repeat in attempts:
            key = (id(run), variant, case.name, repeat)
            if key not in self.jobs:
                fut = self.jobs[key] = concurrent.futures.Future()
                new.append((self._job(key, run, variant, case, repeat), fut))
        if new:
            self.loop.call_soon_threadsafe(self._start, new)

    def _start(self, jobs: list[tuple]) -> None:
        """On the loop: submit_many's jobs become tasks, each settling its future as run_coroutine_threadsafe's."""
        for coro, fut in jobs:
            if fut.cancelled():
                coro.close()
                continue
            self.loop.create_task(coro).add_done_callback(functools.partial(_settle, fut))

    def run_here(self, run: SeriesRun, variant: str, case: CaseSpec, repeat: int, ahead: Any = None) -> AttemptTurn:
        """The attempt now, in the calling thread, on a loop of its own, its database calls made inline: the
        same ledger decisions, with two thread handoffs (to the user's code and back) instead of eight. A
        Ctrl-C during it lets it finish, paid and recorded, then stops the run (a second one abandons it).
        `ahead()`: (variant, case name, repeat) of the attempts of this run that come next, claimed with this
        one when it needs a claim; the finish is group-committed (Ledger.finish_later)."""
        here = self.here_loop()
        with interrupts.current().attempt():
            return here.run_until_complete(self._job((id(run), variant, case.name, repeat), run, variant, case,
                                                     repeat, ahead))

    @property
    def here(self) -> asyncio.AbstractEventLoop | None:
        """run_here's loop, in the pytest thread: the database thread makes its calls inline there."""
        return self.database.inline

    def here_loop(self) -> asyncio.AbstractEventLoop:
        """run_here's event loop, in the calling thread, made on first use."""
        if self.database.inline is None:
            self.database.inline = asyncio.new_event_loop()
        return self.database.inline

    def held_by_another_runner(self, run: SeriesRun, variant: str, case: CaseSpec, repeat: int) -> bool:
        """This attempt waits because another runner (a second pytest on the same series) claimed it."""
        return (id(run), variant, case.name, repeat) in self.held_elsewhere

    def has_free_slots(self) -> bool:
        return len(self.running) < self.concurrency

    def forget(self, run: SeriesRun, variant: str, case: CaseSpec, repeat: int) -> None:
        """The attempt's item reported its result: drop the job and the record and trace it holds."""
        key = (id(run), variant, case.name, repeat)
        self.jobs.pop(key, None)
        self.held_elsewhere.discard(key)

    def stop(self, why: str | None = None, wait: float | None = None) -> None:
        """No new attempt starts; running ones finish, are paid and recorded (waits for them).
        With `why`, every series this process touched that the stop cut short is cancelled (its verdict invalid)."""
        self.stopping = True
        deadline = None if wait is None else time.monotonic() + wait
        for fut in list(self.jobs.values()):
            # in short waits: a second Ctrl-C or SIGTERM stops waiting (unsaved claims go with this process)
            while not fut.done() and not interrupts.hurried() and (deadline is None or time.monotonic() < deadline):
                concurrent.futures.wait([fut], timeout=0.1)
        if why:
            for series_id, root in self.series.items():
                self.database.call(lambda: cancel(self.database.ledger(root).store, series_id, why,
                                                  unless_complete=True))

    def close(self) -> None:
        self.stopping = True
        self._beat.cancel()
        if self.here is not None:       # an attempt a second Ctrl-C abandoned: cancelled, its claim released
            left = asyncio.all_tasks(self.here)
            for task in left:
                task.cancel()
            if left:
                self.here.run_until_complete(asyncio.wait(left))
            for task in left:           # read: a release that failed is no traceback (the claim ends with this runner)
                if not task.cancelled():
                    task.exception()
        if self.thread.is_alive():      # attempts a second Ctrl-C abandoned on the loop: the same, there
            try:
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(timeout=10)
            except (concurrent.futures.TimeoutError, RuntimeError):
                pass
        for run in list(self.runs.values()):
            self.database.call(run.close_store)
        # the last batch of finishes commits, then unstarted claims go
        for ledger in list(self.database.ledgers.values()):
            self.database.call(ledger.close)
            self.database.call(ledger.store.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.database.close()
        if self.here is not None:
            try:
                self.here.run_until_complete(self.here.shutdown_asyncgens())   # the HTTP clients close
            finally:
                self.here.close()
        if not self.thread.is_alive():
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    # --- on the loop --------------------------------------------------------------------------
    def _wake_waiters(self) -> None:
        self._finished.set()
        self._finished = asyncio.Event()

    async def _until_finished(self, finished: asyncio.Event, forever: bool = False) -> None:
        """Wait for an attempt of this process to finish (its spend and reserve may let a claim start), or at
        most POLL_SECONDS (another process's). `forever`: what is waited for runs here (a series' first
        attempt), so its end wakes this wait: 99 jobs asking the ledger every 50 ms cost more than that attempt."""
        if forever:
            await finished.wait()
            return
        try:
            await asyncio.wait_for(finished.wait(), POLL_SECONDS)
        except TimeoutError:
            pass

    def _runs_here(self, run_id: int) -> bool:
        """An attempt of this series run is running in this process."""
        return any(key[0] == run_id for key in self.running)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            for ledger in list(self.database.ledgers.values()):
                try:
                    await self.database.run(ledger.heartbeat)
                except Exception:       # a busy database delays a beat; the lease is much longer
                    pass
            await self._give_back_stale_claims()

    async def _give_back_stale_claims(self) -> None:
        """A claim made ahead blocks every other runner while this one lives: one not started within
        AHEAD_SECONDS (its item went to another xdist worker, or this process runs slower than it planned) is
        released, so a runner waiting for it takes it within a heartbeat. Taken from `claimed` first, under its
        lock: _decide can then no longer start it here."""
        now = time.monotonic()
        with self._claimed_lock:
            stale = [(key, entry) for key, entry in self.claimed.items() if now - entry[1] > AHEAD_SECONDS]
            for key, _ in stale:
                del self.claimed[key]
        for (_, variant, case, repeat), (_, _, root, series_id) in stale:
            try:
                await self.database.run(lambda: self.database.ledger(root).release(series_id, variant, case, repeat))
            except Exception:       # the next beat's claims, or this runner's end, release it
                pass

    async def _job(self, key: tuple, run, variant: str, case: CaseSpec, repeat: int, ahead: Any = None) -> AttemptTurn:
        CALLS_IN_FLIGHT.set(max(self.concurrency, CALLS_IN_FLIGHT.get()))   # HTTP pools: at least one per attempt
        root = run.project.root
        self.runs[id(run)] = run
        series_id = self.series_ids.get(id(run))
        if series_id is None:           # opening the series reads the database: once per run, not per attempt
            try:
                series_id = self.series_ids[id(run)] = await self.database.run(lambda: run.series_id)
            except HeldOutTaken:        # held-out cases spent once: another run's series took them
                return AttemptTurn(SchedulerKind.SPENT, why=run.standing.short)
        self.series[series_id] = root
        while True:
            if self.stopping:
                return AttemptTurn(SchedulerKind.CANCELLED, why="the run stopped before this attempt started")
            finished = self._finished
            async with self.slots:
                if self.stopping:
                    return AttemptTurn(SchedulerKind.CANCELLED, why="the run stopped before this attempt started")
                decision = await self._decide(key, run, series_id, variant, case.name, repeat, ahead)
                if decision.kind == LedgerKind.START:
                    self.running.add(key)
                    budget = Budget(decision.limit_usd)
                    try:
                        record = await self._attempt(run, variant, case, repeat, series_id, budget)
                    except BaseException:
                        await self.database.op(root, "release", series_id, variant, case.name, repeat)
                        self._wake_waiters()
                        raise
                    finally:
                        self.running.discard(key)
            if decision.kind == LedgerKind.START and budget.unusable is not None and record.outcome == "infra_error":
                # a configuration that cannot work: no new attempt of the series starts, in any process
                halt = {**budget.unusable, "reason": PROVIDER_UNUSABLE, "run": run.run}
                await self.database.op(root, "halt", series_id, halt)
                if not (budget.spent or record.unpriced_calls):     # nothing paid: it runs again after the fix
                    await self.database.op(root, "release", series_id, variant, case.name, repeat)
                    self._wake_waiters()
                    return AttemptTurn(SchedulerKind.HALTED, why=halt_text(series_id, halt))
            if decision.kind == LedgerKind.START:
                # its finish (spend, claim and record together) is group-committed: it joins the next claim's
                # transaction or a timer's, with no wait here; its claim counts its reserve until then
                self.database.ledgers[root].finish_later(record.to_wire(), decision.generation)
                self._wake_waiters()
                return AttemptTurn(SchedulerKind.RAN, record)
            if decision.why == CLAIMED_ELSEWHERE:
                if self.here is not None and asyncio.get_running_loop() is self.here:
                    # the caller looks further ahead on the loop thread
                    return AttemptTurn(SchedulerKind.HELD, why=decision.why)
                self.held_elsewhere.add(key)
            if decision.kind == LedgerKind.REUSED:
                wire = await self.database.run(lambda: run.store.finished_attempt(series_id, variant, case.name, repeat))
                if wire is not None:
                    return AttemptTurn(SchedulerKind.REUSED, AttemptRecord.from_wire(wire))
            elif decision.kind in (LedgerKind.PAUSED, LedgerKind.STOPPED, LedgerKind.HALTED):
                return AttemptTurn(SchedulerKind(decision.kind), why=decision.why)
            await self._until_finished(finished, forever=decision.why == FIRST_ALONE and self._runs_here(id(run)))

    async def _decide(self, key: tuple, run: SeriesRun, series_id: str, variant: str, case: str, repeat: int, ahead: Any) -> Decision:
        """Whether the attempt starts: a claim made ahead while the series still runs, else the ledger's
        decision, with the claims of the attempts `ahead()` names in the same transaction."""
        root = run.project.root
        with self._claimed_lock:
            entry = self.claimed.pop(key, None)
        if entry is not None:
            claimed = entry[0]
            if await self.database.run(lambda: self.database.ledger(root).still_holds(series_id, variant, case, repeat,
                                                                        claimed.generation)):
                return claimed
            await self.database.op(root, "release", series_id, variant, case, repeat)
        if ahead is None:
            return await self.database.op(root, "start", series_id, variant, case, repeat)
        later = [a for a in ahead() if a != (variant, case, repeat) and (id(run), *a) not in self.claimed]
        ops = [("start", series_id, variant, case, repeat), *(("claim", series_id, *a) for a in later)]
        decision, *claims = await self.database.run(lambda: self.database.ledger(root).batch(ops))
        now = time.monotonic()
        with self._claimed_lock:
            for a, claim in zip(later, claims):
                if isinstance(claim, Decision) and claim.kind == LedgerKind.START:
                    self.claimed[(id(run), *a)] = (claim, now, root, series_id)
        if isinstance(decision, Exception):
            raise decision
        return decision

    async def _attempt(self, run, variant: str, case: CaseSpec, repeat: int, series_id: str, budget: Budget) -> AttemptRecord:
        from ..experiments import attempt as attempts  # the engine: imported when an attempt runs
        providers = {k: _guarded(k, p, budget) for k, p in run.providers.items()}
        args = (run.project, run.plan, run.checks, providers, variant, case, repeat, series_id)
        return await attempts.run_attempt(*args)


def _guarded(provider_id: str, provider: Provider | ProviderError, budget: Budget) -> BudgetGuard | ProviderError:
    """The provider as one attempt calls it; one that could not be built stays its ProviderError, unless that
    error is permanent (no key): then each call raises it through the guard, which notes it."""
    if isinstance(provider, ProviderError):
        return BudgetGuard(Unbuilt(provider), budget, provider_id) if provider.fix else provider
    return BudgetGuard(provider, budget, provider_id)


async def _cancel_all() -> None:
    """On a loop: every other task cancelled, and waited for (their claims released), their errors read."""
    left = asyncio.all_tasks() - {asyncio.current_task()}
    for task in left:
        task.cancel()
    if left:
        await asyncio.wait(left, timeout=5)
    for task in left:
        if task.done() and not task.cancelled():
            task.exception()


def _settle(fut: concurrent.futures.Future, task: asyncio.Task) -> None:
    """A job's task ended: its future says how (asyncio's own chaining of run_coroutine_threadsafe)."""
    if task.cancelled():
        fut.cancel()
    if not fut.set_running_or_notify_cancel():
        return
    if task.exception() is not None:
        fut.set_exception(task.exception())
    else:
        fut.set_result(task.result())


def _answer(answers: list[tuple]) -> None:
    """On the loop: the results of a ledger batch to the operations that wait for them."""
    for future, result in answers:
        if not future.done():
            future.set_result(result)
