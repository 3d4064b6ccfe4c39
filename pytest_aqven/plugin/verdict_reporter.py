"""The process that sees every attempt's report (the only one, or the xdist controller): it folds the attempt
records as they are reported, decides every series after the run loop (api/decide.py) and writes the
session's reports. How a decision becomes a test report is plugin/__init__.py's (VerdictTests). Imports nothing
heavy: the verdict machinery is imported in the background from the first attempt record on."""
from __future__ import annotations

import gc
import re
import threading
from collections.abc import Generator
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..record import AttemptRecord
from ..report.progress import Progress
from ..series import open_stores
from . import internals
from .running import DISK_FULL, LOOP_ENDED, STORE_AWAY, collect_module, store_away

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

    from ..findings.conclude import Conclusion
    from ..series.tally import SeriesTally


class Reporter:
    """What both roles do after the run loop: the last group-committed records written, and the results this
    process's ledgers discarded counted."""
    is_worker = False

    def __init__(self, config: pytest.Config, fail_on: frozenset[str]) -> None:
        self.config = config
        self.fail_on = fail_on
        # series id -> finishes of this run refused because another runner took their claims (a runner
        # suspended past the lease): those series are decided from the database, whose rows are the ones counted
        self.discarded: dict[str, int] = {}

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        try:
            result = yield
        except BaseException:
            if self.config.stash.get(DISK_FULL, False):   # stopped, yet the series recorded whole are decided
                self.after_loop(session)
            raise
        self.after_loop(session)
        return result

    def after_loop(self, session: pytest.Session) -> None:
        # attempt records are group-committed: the last batch, before anyone reads them
        full = None
        if open_stores.any_open():
            from ..storage.disk import DiskFull
            try:
                open_stores.flush_all()
            except DiskFull as exc:     # those attempts run again with the same command; the others are decided
                full = exc
                self.config.stash[DISK_FULL] = True
        collect = collect_module(session.config)
        sched = self.config.stash.get(collect.SCHEDULER, None) if collect else None
        for ledger in list(sched.database.ledgers.values()) if sched is not None else []:
            for series_id, *_ in ledger.discarded:
                self.discarded[series_id] = self.discarded.get(series_id, 0) + 1
        self.loop_ended(session)
        if full is not None:
            store_away(session, str(full), full=True)

    def loop_ended(self, session: pytest.Session) -> None:
        pass


class WorkerReporter(Reporter):
    """On an xdist worker: attempts run here and their records travel to the controller on their reports;
    at the end it sends what the controller must know besides (collection happens on workers)."""
    is_worker = True

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = internals.worker_output(self.config)
        output["aqven_warnings"] = _check_warnings(self.config)
        output["aqven_discarded"] = self.discarded


class VerdictReporter(Reporter):
    """In the process that sees every attempt's report (the only one, or the xdist controller): folds the
    attempt records and, after the run loop, reports each experiment's verdict as a test result
    `<experiment file>::verdict`."""

    def __init__(self, config: pytest.Config, fail_on: frozenset[str], family: str) -> None:
        super().__init__(config, fail_on)
        self.family = family
        # series id -> its attempts folded as they were reported (one per attempt, however reported); the
        # records themselves are dropped, but for a look's (its table shows them)
        self.tallies: dict[str, SeriesTally] = {}
        self.projects: dict = {}      # module root -> its project, as the session end decided its series
        self.conclusions: list[tuple[str, Conclusion]] = []       # (verdict node id, conclusion)
        self.worker_warnings: list[tuple[str, str]] = []          # aqven check warnings sent by xdist workers
        self.entries: list[dict] = []                             # each series as data (report/data.py)
        self.plans_shown = False
        every = config.getoption("aqven_progress")
        self.progress = Progress(every)
        self.looks: list[tuple[str, str, list[AttemptRecord], dict[str, str]]] = []   # each look's, case by case
        self.standing: dict[str, dict] = {}      # experiment file node id -> the finding that stands (spent cases)
        self.selected: list[str] | None = None      # the verdict items collected and selected, in order
        self.unrecorded: dict[str, str] = {}        # experiment file -> why its first attempt without a record ran none
        self.halted: set[str] = set()               # experiment files whose series stopped at a permanent error
        # (experiment, split, why, state): verdicts left undecided (open; invalid when a permanent error stopped it)
        self.unrun: list[tuple[str, str, str, str]] = []
        self.went_down: list[str] = []              # xdist workers that went down mid-run (kill -9, a crash)
        self._deciding_imported = False
        self.stops = None
        if config.option.aqven_stop_early:
            from ..series.stopping import Looks
            self.stops = Looks(family)

    def _import_deciding(self) -> None:
        if not self._deciding_imported:
            self._deciding_imported = True
            _import_in_background(DECIDING)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        collect = collect_module(session.config)
        if collect is None:
            return
        self.selected = [i.nodeid for i in session.items if isinstance(i, collect.VerdictItem)]
        if self.config.option.collectonly:
            self.config.stash[collect.LAUNCH_PLANS] = collect.launch_plans(session)
        items = [i for i in session.items if isinstance(i, collect.AttemptItem)]
        if items and not self.config.option.collectonly:
            # deciding needs them: imported while the series starts and its first attempt runs alone (the CPU
            # idles for its call), not from the first record on, when a full wave of attempts wants the CPU
            self._import_deciding()
        self.progress.planned(len(items), {f.nodeid: float(f.series.cap.cap_usd)
                                           for f in {i.experiment_file for i in items}})

    @pytest.hookimpl(trylast=True)      # after the terminal reporter wrote this report's letter or line
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        wire = getattr(report, "aqven_attempt", None)
        if wire is not None:
            self._import_deciding()
            record = AttemptRecord.carried(wire)
            tally = self.tallies.get(record.series_id)
            if tally is None:
                from .session import tally_for
                tally = self.tallies[record.series_id] = tally_for(record)
            if tally.add(record):
                self.config.hook.pytest_aqven_attempt_scored(config=self.config, record=record)
                self.progress.attempt(record)
                if self.stops is not None:      # --aqven-stop-early: this process decides when a series stops
                    self.stops.after(tally)
        elif report.skipped and "aqven" in report.keywords and report.nodeid.count("::") == 3:
            # paused, cancelled, vetoed: the open verdict of an experiment no record reached says why
            self.unrecorded.setdefault(report.nodeid.split("::")[0], _skip_reason(report))
            if "aqven_halted" in report.keywords:
                self.halted.add(report.nodeid.split("::")[0])
        standing = getattr(report, "aqven_standing", None)
        if standing is not None:
            self._standing(standing)
        if report.when == "call":
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                self.progress.write(tr)

    def loop_ended(self, session: pytest.Session) -> None:
        if self.config.option.collectonly or (session.shouldstop and not self.config.stash.get(DISK_FULL, False)):
            return
        session.stash[LOOP_ENDED] = session.shouldstop or session.shouldfail
        if not self.tallies and not self.selected:
            return
        # every item and report of the session stays alive to its end: a full garbage collection set off while
        # deciding (the finding's data allocates thousands of lists) would scan them all for nothing, 0.1-0.2 s at
        # 12,000 attempts. They wait in the permanent generation meanwhile, collected as before afterwards (not
        # when something else froze objects: unfreezing would undo that too).
        freeze = gc.isenabled() and gc.get_freeze_count() == 0
        if freeze:
            gc.freeze()
        try:
            self._decide_all(session)
        finally:
            if freeze:
                gc.unfreeze()

    def _decide_all(self, session: pytest.Session) -> None:
        from ..api.decide import decide
        from .session import look_of, projects_of, session_order
        collect = collect_module(session.config)
        collected = {root: lp.project for root, lp in self.config.stash.get(collect.PROJECTS, {}).items()} \
            if collect else {}
        projects = self.projects = projects_of(self.tallies, collected)
        errors = []
        for selected_id in self.selected or []:    # held-out cases taken by another run as the series opened
            standing = self.standing.get(selected_id.split("::")[0])
            if standing is not None and standing.get("at_open"):
                self.report_standing(session, selected_id, standing)
        for verdict_id, series in session_order(self.tallies, self.selected, self.standing, projects):
            # --sw stops at the first failed verdict: the later ones are decided, not reported as tests
            stepped = session.shouldstop and self.config.getoption("stepwise", False)
            reported = None if stepped else verdict_id         # the verdict test this series reports, if any
            try:
                if not series:
                    if reported is not None:
                        self.report_unrun(session, reported)
                    continue
                if verdict_id is None and series[0][1].split == "holdout":
                    self.held_out_unselected(session, series[0][1])
                    continue
                for series_id, tally in series:
                    project = projects[tally.root]
                    look = look_of(project, tally)
                    if look is not None:
                        self.looks.append(look)
                    decided = decide(project, series_id, tally, family=self.family,
                                     reread=series_id in self.discarded, went_down=tuple(self.went_down),
                                     reports_root=self.config.rootpath)
                    self.report(session, tally.file_nodeid, decided, look, reported)
            except Exception as exc:    # another plugin's reporter failed: the other verdicts are still reported
                errors.append(exc)
        if errors:
            raise errors[0]

    def held_out_unselected(self, session: pytest.Session, tally: SeriesTally) -> None:
        """A held-out series whose verdict was not selected (`-k` on some attempts, `-k "not verdict"`): never
        decided, so no finding is written; it stays open, which fails the run when `open` is in fail_on."""
        why = (f"its verdict was not selected ({tally.done} of its attempts ran in this session); a held-out series "
               f"is decided, and its finding written, only by a run that selects its verdict: "
               f"`pytest --aqven-holdout -k {tally.experiment}` finishes it, reusing the recorded attempts")
        self.unrun.append((tally.experiment, tally.split, why, "open"))
        if "open" in self.fail_on:
            session.testsfailed += 1

    def _standing(self, standing: dict) -> None:
        """A held-out experiment whose cases are spent reported the finding that stands: its junit figures."""
        from . import junit
        if standing["file_nodeid"] in self.standing:     # every attempt of a series taken at its opening says so
            return
        self.standing[standing["file_nodeid"]] = standing
        junit.add_suite_properties(self.config, junit.standing_properties(standing), standing["experiment"])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        path = self.config.getoption("aqven_json")
        if path:
            from ..report import json_report

            json_report.write(Path(path), self.entries)
        summary = self.config.getoption("aqven_summary")
        if summary and (self.entries or self.unrun or self.standing):
            from ..report import summary as markdown

            markdown.append(Path(summary), self.entries, self.unrun, sorted(self.standing.values(),
                                                                            key=lambda s: s["file_nodeid"]))

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        xml = getattr(config.option, "xmlpath", None)
        if xml and self.entries:
            from . import junit

            junit.sort_testcases(Path(xml))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: WorkerController, ids: list[str]) -> None:
        """Under xdist the controller never collects: the selected verdicts and the launch plan lines come from
        the first worker's ids (every worker collects the same)."""
        if self.plans_shown:
            return
        self.plans_shown = True
        self.selected = [i for i in ids if i.split("@")[0].endswith("::verdict") and i.count("::") == 1]
        attempt_ids = [i for i in ids if i.split("::")[0].endswith("experiment.yaml") and i.count("::") == 3]
        if not attempt_ids:
            return
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        from .session import plan_lines
        opt = self.config.getoption
        for file_nodeid, cap, line in plan_lines(
                self.config.rootpath, list(dict.fromkeys(i.split("::")[0] for i in attempt_ids)),
                "holdout" if opt("aqven_holdout") else "dev", opt("aqven_cases"), opt("aqven_repeats"), self.family,
                cap_option=opt("aqven_cap"), lines=self.config.get_verbosity() >= 0):
            self.progress.planned(len(attempt_ids), {file_nodeid: cap})
            if line is not None:
                tr.write_line(line)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: WorkerController, error: object | None) -> None:
        if error is not None:       # its last records may have reached this process before their commit
            self.went_down.append(internals.node_name(node))
        output = internals.node_output(node)
        self.worker_warnings += [tuple(w) for w in output.get("aqven_warnings", [])]
        for series_id, n in output.get("aqven_discarded", {}).items():
            self.discarded[series_id] = self.discarded.get(series_id, 0) + n

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        from ..report import terminal
        lines: list[str] = []
        if self.tallies and STORE_AWAY not in self.config.stash:    # the store went away: nothing more is read
            from .session import spend_lines
            lines = spend_lines(self.tallies, self.discarded, self.projects, self.config.getoption("aqven_cap"))
        lines += self.stops.lines if self.stops is not None else []
        if lines:
            terminalreporter.write_sep("=", "aqven series")
            for line in lines:
                terminalreporter.write_line(line)
        collect = collect_module(self.config)
        terminal.launch_plans(terminalreporter, self.config.stash.get(collect.LAUNCH_PLANS, []) if collect else [],
                              self.config.stash.get(collect.LAUNCH_NOTES, {}) if collect else {})
        terminal.check_warnings(terminalreporter, self.standing_warnings())
        terminal.summary(terminalreporter, self.entries, self.unrun)
        terminal.standing(terminalreporter, list(self.standing.values()))
        if self.looks:
            from ..report import look
            for experiment, split, records, kinds in self.looks:
                look.table(terminalreporter, experiment, split, records, kinds)

    def standing_warnings(self) -> list[tuple[str, str]]:
        """The `aqven check` warnings collection found, but W_JUDGE_UNVALIDATED of a judge whose calibration this
        very session confirmed on held-out cases (decided first: session.session_order): it no longer holds."""
        calibrated = {e["experiment"] for e in self.entries
                      if e["split"] == "holdout" and (e["verdict"] or {}).get("state") == "confirmed"}
        return [(root, text) for root, text in _check_warnings(self.config) + self.worker_warnings
                if not _calibrated(text, calibrated)]

    def report(self, session: pytest.Session, file_nodeid: str, decided, look: tuple | None,
               verdict_id: str | None) -> None:
        raise NotImplementedError     # plugin.VerdictTests

    def report_unrun(self, session: pytest.Session, verdict_id: str) -> None:
        raise NotImplementedError

    def report_standing(self, session: pytest.Session, verdict_id: str, standing: dict) -> None:
        raise NotImplementedError


# what deciding and writing findings import (numpy, scipy, the findings writer): imported in a background
# thread once the attempts are collected, while they run, so the session end only decides
DECIDING = ("findings.conclude", "stats.verdicts", "stats.pairs", "stats.intervals", "findings.publish", "api.decide",
            "plugin.session")


def _calibrated(warning: str, confirmed: set[str]) -> bool:
    """Whether a rendered W_JUDGE_UNVALIDATED names, in its hint, a calibration experiment in `confirmed`."""
    if " warning W_JUDGE_UNVALIDATED " not in warning:
        return False
    found = re.search(r"\(pytest --aqven-holdout -k (\S+)\)", warning)
    return found is not None and found.group(1) in confirmed


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def _import_in_background(modules: tuple[str, ...]) -> None:
    def run() -> None:
        try:
            for name in modules:
                import_module(f"..{name}", __package__)
            import_module("scipy.special")
        except Exception:   # the session end imports them again and reports what fails
            pass
    threading.Thread(target=run, name="aqven-imports", daemon=True).start()


def _check_warnings(config: pytest.Config) -> list[tuple[str, str]]:
    collect = collect_module(config)
    return collect.check_warnings(config) if collect else []
