"""pytest hooks only, and how a decision becomes a test report (VerdictTests). The hooks delegate: options
(options.py), the node tree (collect.py), the objects that follow attempts (running.py), the controller
that folds records and decides (verdict_reporter.py over api/decide.py), pytest/xdist internals (internals.py).

pytest imports this module in every run of an environment where the plugin is installed, so it imports
nothing heavy: the node tree (and with it pydantic, numpy, scipy) is imported when the first experiment
file is collected, and the verdict machinery when there is a verdict to decide (docs/performance.md).
"""
from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from ..series import interrupts
from . import internals, options
from .hooks import SeriesStart
from .running import (
    COLLECTOR,
    LOOP_ENDED,
    JunitNames,
    Release,
    StopWatch,
    collect_module,
    end_store_away,
    heard_store_away,
    stop,
)
from .verdict_reporter import VerdictReporter, WorkerReporter

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController

    from ..api.decide import Decided
    from . import collect

ReportOutcome = Literal["passed", "failed", "skipped"]    # a TestReport's


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add(parser)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: WorkerController) -> None:
    """On the xdist controller, for each worker it starts."""
    internals.send_dist_mode(node)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    interrupts.install(internals.past_capture(config))
    config.addinivalue_line("markers", "aqven: an attempt of an AQVEN experiment (deselect with -m 'not aqven')")
    fail_on = options.check(config)
    reporter: WorkerReporter | VerdictTests
    if internals.is_worker(config):     # one object per role: a worker runs attempts, the controller decides
        reporter = WorkerReporter(config, fail_on)
    else:
        reporter = VerdictTests(config, fail_on=fail_on, family=config.option.aqven_intervals)
    config.pluginmanager.register(reporter, "aqven-verdicts")
    config.pluginmanager.register(StopWatch(config), "aqven-stopwatch")
    config.pluginmanager.register(Release(), "aqven-release")
    if getattr(config.option, "xmlpath", None) and not reporter.is_worker:
        config.pluginmanager.register(JunitNames(config), "aqven-junit-names")
    if config.pluginmanager.hasplugin("html") and not reporter.is_worker:   # pytest-html writes on the controller
        from .html import HtmlReport

        config.pluginmanager.register(HtmlReport(reporter), "aqven-html")


def pytest_unconfigure(config: pytest.Config) -> None:
    interrupts.uninstall()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> collect.ExperimentFile | None:
    if file_path.name != "experiment.yaml" or file_path.parent.parent.name != "experiments":
        return None
    root = file_path.parent.parent.parent
    if not (root / options.PROJECT_FILE).is_file():
        return None
    from . import collect
    parent.config.stash[COLLECTOR] = collect
    return collect.ExperimentFile.from_parent(parent, path=file_path, root=root)


@pytest.hookimpl(tryfirst=True)      # before the stepwise plugin's (lfplugin's is a wrapper: it filters after)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A failed verdict reruns its whole experiment: under --lf and --ff its attempts count as last failed
    too, and --sw continues from the experiment's first attempt (a verdict decides only with its attempts)."""
    collect = collect_module(config)
    if collect is not None:
        collect.rerun_failed_verdicts(config, items)
        collect.stop_early_order(config, items)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """An experiment that aqven check rejects is a collection error of its file only: when those are the
    only collection errors, the other experiments still run (as they do under xdist), and the session fails."""
    collect = collect_module(session.config)
    stopped: set[str] = session.config.stash.get(collect.CHECK_FAILED, set()) if collect else set()
    with internals.continuing_on_collection_errors(session, bool(stopped) and session.testsfailed == len(stopped)):
        return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Storage faults stop the session here, with one message, before any worker starts (workers skip it)."""
    if internals.is_worker(session.config):
        return
    roots = options.project_roots(session.config)
    if not roots:
        return
    from ..project.loader import package_of
    from ..storage import StorageError, check_project, preflight, preflight_findings
    for root in roots:
        try:
            preflight(root, again=True)
            check_project(root, package_of(root))
            if session.config.getoption("aqven_holdout"):
                preflight_findings(root)
        except StorageError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Before the first attempt: the models whose calls nothing can price, so their series' spend is a lower
    bound the cap cannot hold (W_PRICE_UNKNOWN). Only a project that calls models over HTTP is loaded."""
    if internals.is_worker(config):
        return []
    from ..providers.prices import calls_over_http
    roots = [root for root in options.project_roots(config) if calls_over_http(root)]
    if not roots:
        return []
    from ..providers.price_rules import before_the_run
    return [f"aqven: {line}" for root in roots for line in before_the_run(root)]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """Run ahead: schedule the attempts this process will run next, so up to N are in flight while
    items still report in order (each item's runtest waits only for its own attempt)."""
    collect = collect_module(item.config)
    if collect is not None and isinstance(item, collect.VerdictItem) and item.standing is None:
        # decided and reported after the run loop (VerdictReporter): here only what pytest's runner does after
        # an item, so the next item's setup finds its parents' stack as it expects
        internals.teardown_exact(item, nextitem)
        return True
    if collect is None or not isinstance(item, collect.AttemptItem) or item.session.shouldstop \
            or item.session.shouldfail:
        return None
    sched = collect.scheduler(item.config)
    if sched.inline:            # concurrency 1: each attempt runs in its own item, nothing ahead
        return None
    window = collect.upcoming(item, 2 * sched.concurrency + 2)
    sched.submit_many([later.attempt for later in collect.new_in_window(item.session, window, sched.concurrency + 1)
                       if isinstance(later, collect.AttemptItem)])
    return None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode) -> None:
    """-x, --maxfail: stop and cancel; a normal end just waits for the attempts in flight. Ctrl-C and SIGTERM
    stop and cancel nothing: the same command continues each series from its recorded attempts (a line says
    so). A store that went away (running.store_away) cancels nothing: the run ends with its message and exit
    code 4."""
    if end_store_away(session):
        return
    why = None
    # a stop the verdicts set off (-x, --sw on a failed verdict) came after every attempt: no series is cut short
    stopped = session.stash[LOOP_ENDED] if LOOP_ENDED in session.stash else (session.shouldstop or session.shouldfail)
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
    if stopped and not interrupted:
        why = f"the run stopped early: {stopped}"
    stop(session, why)
    if interrupted and options.project_roots(session.config) and not internals.is_worker(session.config):
        running = ("the attempts still running were abandoned" if interrupts.hurried()
                   else "the attempts already running finished and were recorded")
        tr = session.config.pluginmanager.getplugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"pytest-aqven: stopped by {interrupts.stopped_by()}: no new attempt started; {running}. "
                          f"Run the same command to continue: it reuses every recorded attempt and runs only the rest.")


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: WorkerController, error: object | None) -> None:
    """xdist: a worker whose store went away stopped the run (its shouldstop); the controller ends it the same."""
    heard_store_away(node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, pytest.TestReport]:
    report = yield
    collect = collect_module(item.config)
    if collect and isinstance(item, collect.AttemptItem) and report.when == "call" and item.record is not None:
        # the record itself where it is folded; on an xdist worker its wire form, plain data for the controller
        report.aqven_attempt = item.record.to_wire() if internals.is_worker(item.config) else item.record
        if item.details is not None:
            report.aqven_details = item.details     # for pytest-html; never set for held-out attempts
        from . import junit
        if junit.per_testcase(item.config):                  # xunit2 allows no properties on a testcase
            item.user_properties.extend(junit.attempt_properties(item.record))   # on the teardown report too
    elif collect and isinstance(item, collect.VerdictItem) and report.when == "call" and item.standing is not None:
        report.aqven_standing = item.standing       # the finding that stands, for the controller's summary
    elif collect and isinstance(item, collect.AttemptItem) and report.when == "call" and report.skipped \
            and item.experiment_file.series.standing is not None:
        # held-out cases another run took as the series opened: the controller reports the verdict from this
        file = item.experiment_file
        report.aqven_standing = {**file.series.standing.entry(file.nodeid), "at_open": True}
    return report


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """Before a real run, one launch plan line per experiment (closed form: instant)."""
    collect = collect_module(config)
    if collect is None or config.option.collectonly or config.get_verbosity() < 0 or internals.is_worker(config):
        return []       # an xdist worker's lines are never shown (the controller writes them): no numpy there
    from ..report import terminal
    files = list(dict.fromkeys(i.experiment_file for i in items if isinstance(i, collect.AttemptItem)))
    family = config.option.aqven_intervals
    return [terminal.plan_line(f.experiment_id, f.series.plan.split, f.series.launch_plan(family, simulate=False))
            for f in files]


VETOES = pytest.StashKey[dict]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """pytest_aqven_series_start may veto an experiment, asked once per process before its first attempt."""
    collect = collect_module(item.config)
    if collect is None or not isinstance(item, collect.AttemptItem):
        return
    file = item.experiment_file
    vetoes = item.config.stash.setdefault(VETOES, {})
    if file.nodeid not in vetoes:
        plan = file.series.plan
        vetoes[file.nodeid] = item.config.hook.pytest_aqven_series_start(config=item.config, series=SeriesStart(
            experiment=file.experiment_id, split=plan.split, root=str(file.root), cases=len(plan.cases),
            repeats=plan.repeats, variants=list(plan.variants),
            attempts=len(plan.cases) * plan.repeats * len(plan.variants),
            spend_cap_usd=float(file.series.project.spec.research.spend_cap_usd)))
    if vetoes[file.nodeid]:
        pytest.skip(f"series not started: {vetoes[file.nodeid]}")


class VerdictTests(VerdictReporter):
    """Each decision reported as the test `<experiment file>::verdict`."""

    def report_unrun(self, session: pytest.Session, verdict_id: str) -> None:
        """A selected verdict that no attempt record reached (its attempts deselected, paused, cancelled or
        vetoed): open, which fails a held-out run when `open` is in --aqven-fail-on (the default); invalid,
        failing every run, when its series stopped at a permanent provider error."""
        file_nodeid = verdict_id.split("::")[0]
        experiment = Path(file_nodeid).parent.name
        split = "holdout" if self.config.getoption("aqven_holdout") else "dev"
        why = self.unrecorded.get(file_nodeid) or (
            f"no attempt of {experiment} ran in this session: select its attempts too (`pytest {file_nodeid}`) "
            "to decide it")
        state = "invalid" if file_nodeid in self.halted else "open"
        self.unrun.append((experiment, split, why, state))
        outcome: ReportOutcome
        longrepr: str | tuple[str, None, str]
        if state == "invalid" or (split == "holdout" and "open" in self.fail_on):
            outcome, longrepr = "failed", f"verdict {state}: {why}"
        else:
            outcome, longrepr = "skipped", (file_nodeid, None, f"Skipped: {why}")
        props = [("aqven_verdict", state), ("aqven_experiment", experiment), ("aqven_split", split),
                 ("aqven_sentence", why)]
        from . import junit
        junit.add_suite_properties(self.config, props, experiment)
        self._fire(session, verdict_id, outcome, longrepr, props, [("aqven verdict", f"verdict {state}: {why}")])

    def report_standing(self, session: pytest.Session, verdict_id: str, standing: dict) -> None:
        """A held-out series that found its cases taken by another run as it opened: its verdict is the finding
        that stands (or open, while another run still runs them), as a verdict item reports one known at
        collection."""
        state = standing["state"]
        failing = state in self.fail_on
        longrepr = f"verdict {state} (the finding that stands; nothing ran): {standing['statement']}\n" \
                   f"{standing['why']}" if failing else None
        from . import junit
        self._fire(session, verdict_id, "failed" if failing else "passed", longrepr, junit.standing_properties(standing),
                   [("aqven verdict", f"verdict {state} (the finding that stands): "
                                      f"{standing['finding'] or standing['series']}")])

    def report(self, session: pytest.Session, file_nodeid: str, decided: Decided, look: tuple | None,
               verdict_id: str | None) -> None:
        """Report a series decided as the test `verdict_id` (None: deselected, reported to no test)."""
        if decided.error is not None:
            if verdict_id is not None:
                self._fire(session, verdict_id, "failed", decided.error, [("aqven_verdict", "error"),
                                                                          ("aqven_series", decided.series_id)])
            return
        conclusion, entry = decided.parts()
        self.conclusions.append((f"{file_nodeid}::verdict", conclusion))
        self.entries.append(entry)
        self.config.hook.pytest_aqven_verdict(config=self.config, series=entry, verdict=entry["verdict"],
                                              cells=entry["cells"],
                                              finding_path=None if conclusion.finding is None else str(conclusion.finding))
        state = decided.state
        failing = state == "invalid" or (conclusion.split == "holdout" and state in self.fail_on)
        text = conclusion.verdict.text if conclusion.verdict else conclusion.note
        outcome: ReportOutcome
        longrepr: str | tuple[str, None, str] | None
        if decided.refused is not None:     # a finding was recorded: its verdict is the text
            outcome, longrepr = "failed", (f"verdict {state}: {text}\nthe finding is recorded in "
                                           f"the project database but its files were not written:\n{decided.refused}")
        elif conclusion.verdict is None and not failing:
            outcome, longrepr = "skipped", (str(file_nodeid), None, f"Skipped: {conclusion.note}")
        elif failing:
            outcome, longrepr = "failed", f"verdict {state}: {text}"
        else:
            outcome, longrepr = "passed", None
        from . import junit
        props = junit.verdict_properties(entry) + (junit.look_properties(look[1], look[2], look[3]) if look else [])
        junit.add_suite_properties(self.config, props, entry["experiment"])
        if verdict_id is not None:
            self._fire(session, verdict_id, outcome, longrepr, props, [("aqven verdict", decided.section())])

    def _fire(self, session: pytest.Session, nodeid: str, outcome: ReportOutcome, longrepr, props: list,
              sections: list | None = None) -> None:
        """Report the collected verdict item `nodeid` as every reporter expects a test: logstart, the three
        phases, logfinish (its item was counted at collection: pytest's progress stays right)."""
        file_nodeid = nodeid.split("::")[0]
        location = (file_nodeid, 0, f"{Path(file_nodeid).parent.name} verdict")
        from . import junit
        props = props if junit.per_testcase(self.config) else []
        hook = self.config.hook
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        for when in ("setup", "call", "teardown"):
            rep = pytest.TestReport(nodeid, location, {"aqven": 1}, outcome if when == "call" else "passed",
                                    longrepr if when == "call" else None, when, user_properties=props,
                                    sections=sections or [])
            hook.pytest_runtest_logreport(report=rep)
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
