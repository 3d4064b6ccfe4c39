"""The plugin objects that follow attempts as they run: memory released once an attempt reported, a stop
(-x, --maxfail) acted on at once, junit testcase names. Imports nothing heavy (registered at configure)."""
from __future__ import annotations

import contextlib
from collections.abc import Generator
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

import pytest

from . import internals

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

LOOP_ENDED = pytest.StashKey[object]()      # set when the run loop ended normally: shouldstop or shouldfail then
STORE_AWAY = pytest.StashKey[str]()         # the store went away mid-run: its one message (config.stash)
DISK_FULL = pytest.StashKey[bool]()         # ... because its disk filled up: the series finished before are decided


COLLECTOR = pytest.StashKey[ModuleType]()  # plugin/collect.py, once this process collected an experiment file


def collect_module(config: pytest.Config) -> ModuleType | None:
    """plugin/collect.py once this process collected an experiment file (pytest_collect_file), else None (asked
    by several hooks of every item: a run without experiments never imports it)."""
    return config.stash.get(COLLECTOR, None)


class Release:
    """Memory flat in the number of attempts: pytest keeps every item and every report to the end of the
    session, so once an attempt reported, its record, details and trace leave them (the VerdictReporter
    folded the record into its tallies)."""

    def __init__(self) -> None:
        self.unread: dict[str, pytest.TestReport] = {}     # call reports whose teardown report is still to come

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
        """Once an attempt reported, nothing of it stays on the item or in the scheduler (pytest keeps both)."""
        try:
            return (yield)
        finally:
            collect = collect_module(item.config)
            if collect is not None and isinstance(item, collect.AttemptItem):
                sched = item.config.stash.get(collect.SCHEDULER, None)
                if sched is not None:
                    item.forget(sched)
                item.user_properties[:] = _not_ours(item.user_properties)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, object, object]:
        """An attempt's record and details leave its call report, and its junit properties its teardown
        report, once its teardown report was seen by every reporter (pytest-html and junitxml read them
        then): pytest keeps every report to the end of the session."""
        try:
            return (yield)
        finally:
            if report.when == "call" and hasattr(report, "aqven_attempt"):
                self.unread[report.nodeid] = report
            elif report.when == "teardown":
                done = self.unread.pop(report.nodeid, None)
                if done is not None:
                    done.__dict__.pop("aqven_attempt", None)
                    done.__dict__.pop("aqven_details", None)
                    report.user_properties[:] = _not_ours(report.user_properties)


def _not_ours(properties: list) -> list:
    return [p for p in properties if not (isinstance(p, tuple) and str(p[0]).startswith("aqven_"))]


class JunitNames:
    """Testcase names CI reporters can read (junit.py), set before junitxml opens each testcase."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from . import junit
        junit.name_testcase(self.config, report)


class StopWatch:
    """-x / --maxfail decided to stop (pytest sets shouldfail in its own pytest_runtest_logreport, which runs
    before this trylast one): stop at once, so the verdicts decided after the loop see a cancelled series."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.session: pytest.Session | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        session = self.session
        if report.nodeid.endswith("::verdict"):     # decided after the attempts: a failed verdict stops nothing
            return
        if session is not None and (session.shouldfail or session.shouldstop) and LOOP_ENDED not in session.stash:
            stop(session, f"the run stopped early: {session.shouldstop or session.shouldfail}")


def stop(session: pytest.Session, why: str | None) -> None:
    """No new attempt starts; running ones finish, are paid and recorded. With `why`, every series this run
    touched and cut short is cancelled (its verdict invalid); one with every attempt recorded is left for the
    same command to decide. Idempotent."""
    collect = collect_module(session.config)
    sched = session.config.stash.get(collect.SCHEDULER, None) if collect else None
    if collect is not None and sched is not None:
        try:
            sched.stop(why)
        finally:
            sched.close()
            del session.config.stash[collect.SCHEDULER]
    reporter = session.config.pluginmanager.getplugin("aqven-verdicts")
    if why and reporter is not None and not reporter.is_worker:     # xdist: the controller knows the series
        from .session import cancel_all
        cancel_all(reporter.tallies, why)


def store_away(session: pytest.Session, message: str, full: bool = False) -> NoReturn:
    """The series store stayed away longer than the run waits for it (storage.StoreAway): the run stops here
    with that one message and the exit code of a store unreachable at the start, and cancels nothing, so the
    same command continues every series. Under xdist the worker's shouldstop stops the controller too, and
    `aqven_store_away` in its workeroutput tells the controller why (plugin.pytest_testnodedown)."""
    session.config.stash[STORE_AWAY] = message
    session.config.stash[DISK_FULL] = full
    if internals.is_worker(session.config):     # an xdist worker: its controller stops at its shouldstop
        session.shouldstop = message
    pytest.exit(message.removeprefix("pytest-aqven: "), returncode=pytest.ExitCode.USAGE_ERROR)


def end_store_away(session: pytest.Session) -> bool:
    """At the session's end after store_away: exit code 4, a worker tells its controller why, nothing is
    cancelled (what was not committed runs again with the same command). False when the store stayed."""
    away = session.config.stash.get(STORE_AWAY, None)
    if away is None:
        return False
    session.exitstatus = pytest.ExitCode.USAGE_ERROR
    if internals.is_worker(session.config):
        internals.worker_output(session.config)["aqven_store_away"] = away
        internals.worker_output(session.config)["aqven_disk_full"] = session.config.stash.get(DISK_FULL, False)
    from ..storage import StorageError
    with contextlib.suppress(StorageError):
        stop(session, None)
    return True


def heard_store_away(node: WorkerController) -> None:
    """xdist's controller: a worker whose store went away stopped the run (its shouldstop); it ends the same."""
    output = internals.node_output(node)
    if output.get("aqven_store_away") is not None:
        node.config.stash[STORE_AWAY] = output["aqven_store_away"]
        node.config.stash[DISK_FULL] = output.get("aqven_disk_full", False)
