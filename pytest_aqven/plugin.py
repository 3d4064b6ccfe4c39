"""pytest hooks only: options, collection, attempt data on reports, verdict reports, summaries.

pytest imports this module in every run of an environment where the plugin is installed, so it imports
nothing heavy: the node tree (and with it pydantic, numpy, scipy) is imported when the first experiment
file is collected, and the verdict machinery when there is a verdict to decide (docs/performance.md).
"""
from __future__ import annotations

import gc
import sys
import threading
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .report.progress import Progress

if TYPE_CHECKING:
    from .project.loader import Project
    from .series.conclude import Conclusion
    from .series.tally import SeriesTally

FAILING = ("refuted", "inconclusive", "invalid", "open")
STATES = ("confirmed", "refuted", "inconclusive", "signal", "invalid", "open")   # open: no verdict (yet)
PROJECT_FILE = "aqven.yaml"     # project.loader.PROJECT_FILE, without importing the loader


def _collect_module():
    """pytest_aqven.collect once this process collected an experiment file, else None."""
    return sys.modules.get(f"{__package__}.collect")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("aqven", "AQVEN experiments")
    group.addoption("--aqven-holdout", action="store_true", default=False,
                    help="run the held-out cases and write findings (default: the working cases)")
    group.addoption("--aqven-cases", type=int, default=None, metavar="N",
                    help="cases per series, overriding plan.cases")
    group.addoption("--aqven-repeats", type=int, default=None, metavar="N",
                    help="repeats per case, overriding plan.repeats (1 to 20)")
    group.addoption("--aqven-fail-on", default=None, metavar="STATES",
                    help="comma-separated verdicts that fail a held-out run; open: a series left without a verdict "
                         "(paused, or attempts not run) (default: refuted,inconclusive,invalid,open)")
    group.addoption("--aqven-intervals", choices=("robust", "model"), default=None,
                    help="robust: model-based interval hulled with a distribution-free one (default); "
                         "model: the model-based interval alone")
    group.addoption("--aqven-concurrency", type=int, default=None, metavar="N",
                    help="attempts in flight per process (default 1; with -n it multiplies)")
    group.addoption("--aqven-cap", default=None, metavar="USD",
                    help="this run's series cap in USD; above the project cap the series waits for approval")
    group.addoption("--aqven-new-series", action="store_true", default=False,
                    help="start a new series instead of continuing an unfinished one (which is cancelled); "
                         "held out: only on held-out cases no finding used")
    group.addoption("--aqven-respend-holdout", action="store_true", default=False,
                    help="run held-out cases that already gave a finding again (a new look at the same cases, "
                         "recorded in its finding)")
    group.addoption("--aqven-json", default=None, metavar="PATH",
                    help="write every series of the session (verdict, cells, intervals, spend, finding) as JSON")
    group.addoption("--aqven-summary", default=None, metavar="FILE",
                    help="append the verdicts as a Markdown table to FILE (a CI step summary: $GITHUB_STEP_SUMMARY)")
    group.addoption("--aqven-progress", type=float, default=None, metavar="SECONDS",
                    help="a progress line (attempts, spend of cap, time left) every SECONDS of a run (default 30; 0: none)")
    group.addoption("--aqven-record", action="store_true", default=False,
                    help="call the models and record every call in cassettes under <project>/cassettes")
    group.addoption("--aqven-record-missing", action="store_true", default=False,
                    help="replay recorded calls; call the models only for calls missing from the cassettes")
    group.addoption("--aqven-replay", action="store_true", default=False,
                    help="answer every model call from the cassettes, offline; a missing call is cassette_miss")
    # the options with a lasting meaning, typed (pytest >= 8.4): the command line wins over the ini file
    parser.addini("aqven_fail_on", "verdicts that fail a held-out run (one per line, or comma-separated)",
                  type="linelist", default=list(FAILING))
    parser.addini("aqven_intervals", "robust or model", default="robust")
    parser.addini("aqven_concurrency", "attempts in flight per process", type="int", default=1)
    parser.addini("aqven_progress", "seconds between progress lines (0: none)", type="float", default=30.0)
    parser.addini("aqven_json", "write every series of the session as JSON to this path", default="")
    parser.addini("aqven_summary", "append the verdicts as a Markdown table to this file", default="")
    parser.addini("aqven_cassettes", "record, record_missing or replay (as --aqven-record, ...)", default="")


def dist_mode(config: pytest.Config) -> str:
    """xdist's distribution mode of this run, on a worker too (xdist sets `dist` to "no" there: the controller
    sends it in the worker's input); "no" without xdist."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return workerinput.get("aqven_dist", "unknown")     # a controller without this plugin: assume the worst
    return config.getoption("dist", "no") or "no"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """On the xdist controller, for each worker it starts."""
    node.workerinput["aqven_dist"] = dist_mode(node.config)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "aqven: an attempt of an AQVEN experiment (deselect with -m 'not aqven')")
    cases, repeats = config.getoption("aqven_cases"), config.getoption("aqven_repeats")
    if cases is not None and cases < 1:
        raise pytest.UsageError("--aqven-cases must be at least 1")
    if repeats is not None and not 1 <= repeats <= 20:
        raise pytest.UsageError("--aqven-repeats must be between 1 and 20")
    _from_ini(config)
    if not 1 <= config.option.aqven_concurrency <= 1024:
        raise pytest.UsageError("--aqven-concurrency must be between 1 and 1024")
    if config.getoption("aqven_cap") is not None:
        from .series.cap import CapError, parse_usd
        try:
            parse_usd(config.getoption("aqven_cap"), "--aqven-cap")
        except CapError as exc:
            raise pytest.UsageError(str(exc)) from None
    if config.getoption("aqven_respend_holdout") and not config.getoption("aqven_holdout"):
        raise pytest.UsageError("--aqven-respend-holdout goes with --aqven-holdout")
    if config.getoption("aqven_respend_holdout") and config.getoption("aqven_new_series"):
        raise pytest.UsageError("--aqven-respend-holdout and --aqven-new-series exclude each other: the one runs the "
                                "spent held-out cases again, the other only fresh ones")
    if sum(map(bool, (config.getoption("aqven_record"), config.getoption("aqven_record_missing"),
                      config.getoption("aqven_replay")))) > 1:
        raise pytest.UsageError("--aqven-record, --aqven-record-missing and --aqven-replay exclude each other")
    reporter = VerdictReporter(config, fail_on=_fail_on(config), family=config.option.aqven_intervals)
    config.pluginmanager.register(reporter, "aqven-verdicts")
    config.pluginmanager.register(StopWatch(config), "aqven-stopwatch")
    config.pluginmanager.register(Release(), "aqven-release")
    if getattr(config.option, "xmlpath", None) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(JunitNames(config), "aqven-junit-names")
    if config.pluginmanager.hasplugin("html"):
        from .report.html import HtmlReport

        config.pluginmanager.register(HtmlReport(reporter), "aqven-html")


def _from_ini(config: pytest.Config) -> None:
    """Each option the command line left unset takes its ini value (typed, checked here once), so the rest of
    the plugin reads `config.option` alone."""
    opt = config.option
    for name in ("aqven_concurrency", "aqven_progress", "aqven_intervals", "aqven_json", "aqven_summary"):
        if getattr(opt, name) is None:
            try:
                setattr(opt, name, config.getini(name) or None)
            except (TypeError, ValueError) as exc:
                raise pytest.UsageError(f"{name} (ini): {exc}") from None
    opt.aqven_concurrency = opt.aqven_concurrency or 1
    opt.aqven_progress = 30.0 if opt.aqven_progress is None else opt.aqven_progress
    if opt.aqven_intervals not in (None, "robust", "model"):
        raise pytest.UsageError(f"aqven_intervals (ini): {opt.aqven_intervals!r} is neither robust nor model")
    opt.aqven_intervals = opt.aqven_intervals or "robust"
    mode = config.getini("aqven_cassettes")
    if mode not in ("", "record", "record_missing", "replay"):
        raise pytest.UsageError(f"aqven_cassettes (ini): {mode!r} is none of record, record_missing, replay")
    if mode and not (opt.aqven_record or opt.aqven_record_missing or opt.aqven_replay):
        setattr(opt, f"aqven_{mode}", True)


def _fail_on(config: pytest.Config) -> frozenset[str]:
    raw = config.getoption("aqven_fail_on")
    lines = [raw] if raw is not None else config.getini("aqven_fail_on")
    states = frozenset(s.strip() for line in lines for s in str(line).split(",") if s.strip())
    unknown = states - set(STATES)
    if unknown:
        raise pytest.UsageError(f"--aqven-fail-on: unknown verdict {', '.join(sorted(unknown))}")
    return states


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.name != "experiment.yaml" or file_path.parent.parent.name != "experiments":
        return None
    root = file_path.parent.parent.parent
    if not (root / PROJECT_FILE).is_file():
        return None
    from .collect import ExperimentFile
    return ExperimentFile.from_parent(parent, path=file_path, root=root)


@pytest.hookimpl(tryfirst=True)      # before the stepwise plugin's (lfplugin's is a wrapper: it filters after)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A failed verdict reruns its whole experiment: under --lf and --ff its attempts count as last failed
    too, and --sw continues from the experiment's first attempt (a verdict decides only with its attempts)."""
    collect = _collect_module()
    if collect is None:
        return
    lf = config.pluginmanager.getplugin("lfplugin")
    if lf is not None and (config.getoption("lf") or config.getoption("failedfirst")):
        # keys are node id strings, or NodeId objects since pytest 9.2 (whose str() is the node id)
        failed = {str(key).rsplit("::", 1)[0] for key in lf.lastfailed if str(key).endswith("::verdict")}
        for item in items:
            if isinstance(item, collect.AttemptItem) and item.experiment_file.nodeid in failed:
                lf.lastfailed[getattr(item, "id", item.nodeid)] = True
    sw = config.pluginmanager.getplugin("stepwiseplugin")
    info = getattr(sw, "cached_info", sw)               # pytest >= 8.4 keeps the last failure in cached_info
    attr = "last_failed" if hasattr(info, "last_failed") else "lastfailed"
    last = getattr(info, attr, None)
    if last is not None and str(last).endswith("::verdict"):
        file_nodeid = str(last).rsplit("::", 1)[0]
        first = next((i for i in items if isinstance(i, collect.AttemptItem) and i.experiment_file.nodeid == file_nodeid),
                     None)
        if first is not None:
            setattr(info, attr, getattr(first, "id", first.nodeid) if not isinstance(last, str) else first.nodeid)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session):
    """An experiment that aqven check rejects is a collection error of its file only: when those are the
    only collection errors, the other experiments still run (as they do under xdist), and the session fails."""
    option = session.config.option
    keep = option.continue_on_collection_errors
    collect = _collect_module()
    stopped = session.config.stash.get(collect.CHECK_FAILED, set()) if collect else set()
    if stopped and session.testsfailed == len(stopped):
        option.continue_on_collection_errors = True
    try:
        return (yield)
    finally:
        option.continue_on_collection_errors = keep


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Storage faults stop the session here, with one message, before any worker starts (workers skip it)."""
    if hasattr(session.config, "workerinput"):
        return
    roots = _project_roots(session.config)
    if not roots:
        return
    from .storage import StorageError, preflight, preflight_findings
    for root in roots:
        try:
            preflight(root, again=True)
            if session.config.getoption("aqven_holdout"):
                preflight_findings(root)
        except StorageError as exc:
            raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Before the first attempt: the models whose calls nothing can price, so their series' spend is a lower
    bound the cap cannot hold (W_PRICE_UNKNOWN). Only a project that calls models over HTTP is loaded."""
    if hasattr(config, "workerinput"):
        return []
    from .providers.prices import calls_over_http
    roots = [root for root in _project_roots(config) if calls_over_http(root)]
    if not roots:
        return []
    from .check.prices import before_the_run
    return [f"aqven: {line}" for root in roots for line in before_the_run(root)]


def _find_root(start: Path) -> Path | None:
    """project.loader.find_root, without importing the loader."""
    start = start.resolve()
    for folder in [start, *start.parents] if start.is_dir() else list(start.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder
    return None


def _project_roots(config: pytest.Config) -> list[Path]:
    find_root = _find_root
    roots = []
    for arg in config.args or [str(config.invocation_params.dir)]:
        path = Path(config.invocation_params.dir, arg.split("::")[0])
        found = find_root(path) if path.exists() else None
        if found is None and path.is_dir():
            found_below = [p.parent for p in path.glob("*/aqven.yaml")] + [p.parent for p in path.glob("aqven.yaml")]
            roots += found_below
        elif found is not None:
            roots.append(found)
    return list(dict.fromkeys(roots))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem) -> None:
    """Run ahead: schedule the attempts this process will run next, so up to N are in flight while
    items still report in order (each item's runtest waits only for its own attempt)."""
    collect = _collect_module()
    if collect is not None and isinstance(item, collect.VerdictItem) and item.standing is None:
        # decided and reported after the run loop (VerdictReporter): here only what pytest's runner does after
        # an item, so the next item's setup finds its parents' stack as it expects
        item.session._setupstate.teardown_exact(nextitem)
        return True
    if collect is None or not isinstance(item, collect.AttemptItem) or item.session.shouldstop \
            or item.session.shouldfail:
        return None
    sched = collect.scheduler(item.config)
    if sched.inline:            # concurrency 1: each attempt runs in its own item, nothing ahead
        return None
    for later in _new_in_window(item.session, upcoming(item, 2 * sched.concurrency + 2)):
        if isinstance(later, collect.AttemptItem):
            later.schedule(sched)
    return None


def _new_in_window(session: pytest.Session, window: list[pytest.Item]) -> list[pytest.Item]:
    """The items of the look-ahead window after the previous window's last one: the window moves an item at
    a time, so each item schedules one attempt instead of 2N + 2 (a cost per attempt that grew with N)."""
    last = session.stash.get(_WINDOW_END, None)
    session.stash[_WINDOW_END] = window[-1] if window else None
    for i in range(len(window) - 1, -1, -1):
        if window[i] is last:
            return window[i + 1:]
    return window       # the first window, or one that moved otherwise: all of it (scheduling is idempotent)


def upcoming(item: pytest.Item, count: int) -> list[pytest.Item]:
    """This item and the next ones this process runs: under xdist only those the worker was given."""
    session = item.session
    worker = session.stash.get(_WORKER, False)
    if worker is False:
        worker = session.stash[_WORKER] = next((p for p in item.config.pluginmanager.get_plugins()
                                                if type(p).__name__ == "WorkerInteractor" and hasattr(p, "torun")), None)
    if worker is not None:
        try:
            with worker.torun.lock() as queue:
                indices = [worker.nextitem_index, *queue]
        except Exception:       # xdist internals changed: no look-ahead, attempts still run
            return [item]
        return [item, *(session.items[i] for i in indices[:count] if isinstance(i, int))]
    positions = session.stash.get(_POSITIONS, None)
    if positions is None:
        positions = session.stash[_POSITIONS] = {id(it): i for i, it in enumerate(session.items)}
    start = positions.get(id(item))
    return [item] if start is None else session.items[start:start + count]


_WORKER = pytest.StashKey[object]()     # xdist's WorkerInteractor, or None: looked up once
_POSITIONS = pytest.StashKey[dict]()
_WINDOW_END = pytest.StashKey[pytest.Item | None]()


class Release:
    """Memory flat in the number of attempts: pytest keeps every item and every report to the end of the
    session, so once an attempt reported, its record, details and trace leave them (the VerdictReporter
    folded the record into its tallies)."""

    def __init__(self):
        self.unread: dict[str, pytest.TestReport] = {}     # call reports whose teardown report is still to come

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        """Once an attempt reported, nothing of it stays on the item or in the scheduler (pytest keeps both)."""
        try:
            return (yield)
        finally:
            collect = _collect_module()
            if collect is not None and isinstance(item, collect.AttemptItem):
                sched = item.config.stash.get(collect.SCHEDULER, None)
                if sched is not None:
                    item.forget(sched)
                item.user_properties[:] = _not_ours(item.user_properties)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport):
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
    """Testcase names CI reporters can read (report/junit.py), set before junitxml opens each testcase."""

    def __init__(self, config: pytest.Config):
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from .report import junit
        junit.name_testcase(self.config, report)


class StopWatch:
    """-x / --maxfail decided to stop (pytest sets shouldfail in its own pytest_runtest_logreport, which runs
    before this trylast one): stop at once, so the verdicts decided after the loop see a cancelled series."""

    def __init__(self, config: pytest.Config):
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
            _stop(session, f"the run stopped early: {session.shouldstop or session.shouldfail}")


def _stop(session: pytest.Session, why: str | None) -> None:
    """No new attempt starts; running ones finish, are paid and recorded. With `why`, every series this run
    touched is cancelled (its verdict invalid). Idempotent."""
    collect = _collect_module()
    sched = session.config.stash.get(collect.SCHEDULER, None) if collect else None
    if sched is not None:
        try:
            sched.stop(why)
        finally:
            sched.close()
            del session.config.stash[collect.SCHEDULER]
    reporter = session.config.pluginmanager.getplugin("aqven-verdicts")
    if why and reporter is not None and not reporter.is_worker:     # xdist: the controller knows the series
        from .series.db import Store
        from .series.ledger import cancel
        for series_id, tally in reporter.tallies.items():
            store = Store(Path(tally.root))
            try:
                cancel(store, series_id, why)
            finally:
                store.close()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus) -> None:
    """Ctrl-C, -x, --maxfail: stop and cancel; a normal end just waits for the attempts in flight."""
    why = None
    # a stop the verdicts set off (-x, --sw on a failed verdict) came after every attempt: no series is cut short
    stopped = session.stash[LOOP_ENDED] if LOOP_ENDED in session.stash else (session.shouldstop or session.shouldfail)
    if exitstatus == pytest.ExitCode.INTERRUPTED and LOOP_ENDED not in session.stash:
        why = "interrupted (Ctrl-C)"
    elif stopped:
        why = f"the run stopped early: {stopped}"
    _stop(session, why)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    report = yield
    collect = _collect_module()
    if collect and isinstance(item, collect.AttemptItem) and report.when == "call" and item.record is not None:
        report.aqven_attempt = item.record          # plain data: travels through xdist unchanged
        if item.details is not None:
            report.aqven_details = item.details     # for pytest-html; never set for held-out attempts
        from .report import junit
        if junit.per_testcase(item.config):                  # xunit2 allows no properties on a testcase
            item.user_properties.extend(junit.attempt_properties(item.record))   # on the teardown report too
    elif collect and isinstance(item, collect.VerdictItem) and report.when == "call" and item.standing is not None:
        report.aqven_standing = item.standing       # the finding that stands, for the controller's summary
    return report


def unwritten(project: Project, conclusion: Conclusion, exc: OSError) -> str:
    """Why the finding's files are not written, and what publishes them (the database holds the finding)."""
    where = Path(exc.filename).parent if getattr(exc, "filename", None) else project.root / "experiments" / \
        conclusion.experiment / "findings"
    try:
        where_text = where.relative_to(project.root).as_posix() or "the module root"
    except ValueError:
        where_text = str(where)
    return (f"{exc.strerror or exc}: {where_text}. Free space on that disk (or make {where_text} writable), then run "
            f"the same command: it publishes the recorded finding; no attempt runs again.")


def _series_spend(tr, tallies: dict[str, SeriesTally], discarded: dict[str, int]) -> None:
    """Per series this run reported: what ran, what was reused, the spend against the cap, and the results
    discarded because another runner took their claims."""
    from .series.db import Store
    from .series.ledger import LEASE_SECONDS, series_spend
    lines = []
    for series_id, tally in tallies.items():
        reused = tally.reused
        store = Store(Path(tally.root))
        try:
            series = store.series(series_id) or {}
            spent = series_spend(store, series_id)
        finally:
            store.close()
        lines.append(f"{tally.experiment} series {series_id}: {tally.done - reused} attempts ran, "
                     f"{reused} reused; spent {spent.text(series.get('cap_usd'))}; status {series.get('status')}")
        for old in series.get("closed") or []:
            lines.append(f"  closed series {old['series']}: its inputs changed since it started "
                         f"({', '.join(old['changed'])}), so it can never be continued; its verdict is invalid "
                         f"(inputs_changed)")
        if discarded.get(series_id):
            n = discarded[series_id]
            lines.append(f"  {n} result{'s' if n != 1 else ''} of this run discarded: another runner took "
                         f"{'their claims' if n != 1 else 'its claim'} while this one was suspended past the "
                         f"{LEASE_SECONDS:g} s lease; the other runner's results are the ones counted")
    if lines:
        tr.write_sep("=", "aqven series")
        for line in lines:
            tr.write_line(line)
def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """Before a real run, one launch plan line per experiment (closed form: instant)."""
    collect = _collect_module()
    if collect is None or config.option.collectonly or config.get_verbosity() < 0 or hasattr(config, "workerinput"):
        return []       # an xdist worker's lines are never shown (the controller writes them): no numpy there
    from .report import terminal
    files = list(dict.fromkeys(i.experiment_file for i in items if isinstance(i, collect.AttemptItem)))
    family = config.option.aqven_intervals
    return [terminal.plan_line(f.experiment_id, f.series.plan.split, f.series.launch_plan(family, simulate=False))
            for f in files]


VETOES = pytest.StashKey[dict]()
LOOP_ENDED = pytest.StashKey[object]()      # set when the run loop ended normally: shouldstop or shouldfail then


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """pytest_aqven_series_start may veto an experiment, asked once per process before its first attempt."""
    collect = _collect_module()
    if collect is None or not isinstance(item, collect.AttemptItem):
        return
    file = item.experiment_file
    vetoes = item.config.stash.setdefault(VETOES, {})
    if file.nodeid not in vetoes:
        plan = file.series.plan
        vetoes[file.nodeid] = item.config.hook.pytest_aqven_series_start(config=item.config, series={
            "experiment": file.experiment_id, "split": plan.split, "root": str(file.root),
            "cases": len(plan.cases), "repeats": plan.repeats, "variants": list(plan.variants),
            "attempts": len(plan.cases) * plan.repeats * len(plan.variants),
            "spend_cap_usd": float(file.series.project.spec.research.spend_cap_usd)})
    if vetoes[file.nodeid]:
        pytest.skip(f"series not started: {vetoes[file.nodeid]}")


def quick_plan(project: Project, experiment, split: str, layout: dict, family: str):
    """The launch plan in closed form (instant), with this experiment's history."""
    from .series.lifecycle import SeriesRun

    run = SeriesRun(project, experiment, split, cases=layout["cases"] or None, repeats=layout["repeats"])
    try:
        return run.launch_plan(family, simulate=False)
    finally:
        run.close_store()


class VerdictReporter:
    """Collects attempt records from reports (local or from xdist workers) and, after the run loop,
    reports each experiment's verdict as a test result `<experiment file>::verdict`."""

    def __init__(self, config: pytest.Config, fail_on: frozenset[str], family: str):
        self.config = config
        self.fail_on = fail_on
        self.family = family
        # series id -> its attempts folded as they were reported (one per attempt, however reported); the
        # records themselves are dropped, but for a look's (its table shows them)
        self.tallies: dict[str, SeriesTally] = {}
        self.conclusions: list[tuple[str, Conclusion]] = []       # (verdict node id, conclusion)
        self.worker_warnings: list[tuple[str, str]] = []          # aqven check warnings sent by xdist workers
        self.entries: list[dict] = []                             # each series as data (report/data.py)
        self.plans_shown = False
        every = config.getoption("aqven_progress")
        self.progress = Progress(every)
        self.looks: list[tuple[str, str, list[dict], dict[str, str]]] = []   # what each look shows, case by case
        # series id -> finishes of this run refused because another runner took their claims (a runner
        # suspended past the lease): those series are decided from the database, whose rows are the ones counted
        self.discarded: dict[str, int] = {}
        self.standing: dict[str, dict] = {}      # experiment file node id -> the finding that stands (spent cases)
        self.selected: list[str] | None = None      # the verdict items collected and selected, in order
        self.unrecorded: dict[str, str] = {}        # experiment file -> why its first attempt without a record ran none
        self.unrun: list[tuple[str, str, str]] = []  # (experiment, split, why): selected verdicts no attempt reached

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        collect = _collect_module()
        if collect is None:
            return
        if not self.is_worker:
            self.selected = [i.nodeid for i in session.items if isinstance(i, collect.VerdictItem)]
        if self.config.option.collectonly and not self.is_worker:
            self.config.stash[collect.LAUNCH_PLANS] = collect.launch_plans(session)
        items = [i for i in session.items if isinstance(i, collect.AttemptItem)]
        self.progress.planned(len(items), {str(f.root): float(f.series.project.spec.research.spend_cap_usd)
                                           for f in {i.experiment_file for i in items}})

    @pytest.hookimpl(trylast=True)      # after the terminal reporter wrote this report's letter or line
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "aqven_attempt", None)
        if record is not None and not self.is_worker:
            if not self.tallies:
                _import_in_background(DECIDING)
            tally = self.tallies.get(record["series_id"])
            if tally is None:
                tally = self.tallies[record["series_id"]] = _tally_for(record)
            if tally.add(record):
                self.config.hook.pytest_aqven_attempt_scored(config=self.config, record=record)
                self.progress.attempt(record)
        elif report.skipped and not self.is_worker and "aqven" in report.keywords and report.nodeid.count("::") == 3:
            # paused, cancelled, vetoed: the open verdict of an experiment no record reached says why
            self.unrecorded.setdefault(report.nodeid.split("::")[0], _skip_reason(report))
        standing = getattr(report, "aqven_standing", None)
        if standing is not None and not self.is_worker:
            self._standing(standing)
        if report.when == "call" and not self.is_worker:
            tr = self.config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                self.progress.write(tr)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self, session: pytest.Session):
        result = yield
        # attempt records are group-committed: the last batch, before anyone reads them (the module may be
        # half imported by the background import thread: then this process opened no store)
        flush_all = getattr(sys.modules.get(f"{__package__}.series.db"), "flush_all", None)
        if flush_all is not None:
            flush_all()
        self._count_discarded()
        if self.is_worker or self.config.option.collectonly or session.shouldstop:
            return result
        session.stash[LOOP_ENDED] = session.shouldstop or session.shouldfail
        if not self.tallies and not self.selected:
            return result
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
        return result

    def _count_discarded(self) -> None:
        collect = _collect_module()
        sched = self.config.stash.get(collect.SCHEDULER, None) if collect else None
        for ledger in list(sched.ledgers.values()) if sched is not None else []:
            for series_id, *_ in ledger.discarded:
                self.discarded[series_id] = self.discarded.get(series_id, 0) + 1

    def _decide_all(self, session: pytest.Session) -> None:
        from .project.loader import load_project
        # the project collection loaded (an xdist controller collects nothing: it loads it once); the end
        # snapshot hashes the input files as they are now, so a file changed during the run still shows
        collected = self.config.stash.get(_collect_module().PROJECTS, {}) if _collect_module() else {}
        projects: dict[str, Project] = {}
        by_file: dict[str, list[tuple[str, SeriesTally]]] = {}
        for series_id, tally in sorted(self.tallies.items(), key=lambda kv: kv[1].file_nodeid):
            by_file.setdefault(tally.file_nodeid, []).append((series_id, tally))
        # in file order whatever order the items ran in (pytest-randomly, --ff): reports read the same every run
        selected = sorted(self.selected) if self.selected is not None else [f"{f}::verdict" for f in by_file]
        # a held-out experiment whose cases are spent reported its standing finding as its verdict item ran
        selected = [v for v in selected if v.split("::")[0] not in self.standing]
        # each selected verdict in collection order, then the series whose verdict was deselected (decided all
        # the same: their data is final; no test reports them)
        order = [(verdict_id, by_file.pop(verdict_id.split("::")[0], None)) for verdict_id in selected]
        order += [(None, series) for series in by_file.values()]
        # an experiment a judge's validated_by names is decided first: its finding decides the judge's verdicts
        for tally in self.tallies.values():
            if tally.root not in projects:
                lp = collected.get(Path(tally.root))
                projects[tally.root] = lp.project if lp is not None and lp.project.spec is not None \
                    else load_project(Path(tally.root))
        calibrations = {(root, c.validated_by) for root, p in projects.items() for e in p.experiments.values()
                        if e.spec is not None for c in e.spec.checks if c.validated_by}
        order.sort(key=lambda entry: not any((tally.root, tally.experiment) in calibrations
                                             for _, tally in entry[1] or ()))
        errors = []
        for verdict_id, series in order:
            # --sw stops at the first failed verdict: the later ones are decided, not reported as tests
            fire = verdict_id is not None and not (session.shouldstop and self.config.getoption("stepwise", False))
            try:
                if not series:
                    if fire:
                        self._report_unrun(session, verdict_id)
                    continue
                for series_id, tally in series:
                    root = tally.root
                    experiment = projects[root].experiments.get(tally.experiment)
                    look = None
                    if experiment is not None and experiment.spec is not None \
                            and experiment.spec.question.kind == "look" and tally.records is not None:
                        look = (experiment.id, tally.split, tally.records, {c.id: c.kind for c in experiment.spec.checks})
                        self.looks.append(look)
                    self._report(session, projects[root], series_id, tally, look, verdict_id if fire else None)
            except Exception as exc:    # another plugin's reporter failed: the other verdicts are still reported
                errors.append(exc)
        if errors:
            raise errors[0]

    def _report_unrun(self, session: pytest.Session, verdict_id: str) -> None:
        """A selected verdict that no attempt record reached (its attempts deselected, paused, cancelled or
        vetoed): open, which fails a held-out run when `open` is in --aqven-fail-on (the default)."""
        file_nodeid = verdict_id.split("::")[0]
        experiment = Path(file_nodeid).parent.name
        split = "holdout" if self.config.getoption("aqven_holdout") else "dev"
        why = self.unrecorded.get(file_nodeid) or (
            f"no attempt of {experiment} ran in this session: select its attempts too (`pytest {file_nodeid}`) "
            "to decide it")
        self.unrun.append((experiment, split, why))
        if split == "holdout" and "open" in self.fail_on:
            outcome, longrepr = "failed", f"verdict open: {why}"
        else:
            outcome, longrepr = "skipped", (file_nodeid, None, f"Skipped: {why}")
        props = [("aqven_verdict", "open"), ("aqven_experiment", experiment), ("aqven_split", split),
                 ("aqven_sentence", why)]
        from .report import junit
        junit.add_suite_properties(self.config, props, experiment)
        self._fire(session, verdict_id, outcome, longrepr, props, [("aqven verdict", f"verdict open: {why}")])

    def _report(self, session: pytest.Session, project: Project, series_id: str, tally: SeriesTally,
                look: tuple | None, verdict_id: str | None) -> None:
        """Decide the series and write its finding; report it as the test `verdict_id` (None: deselected)."""
        from . import storage
        from .findings.files import FindingsRefused
        from .series.conclude import conclude
        from .series.findings import write_finding_for
        file_nodeid = tally.file_nodeid
        refused = None
        try:
            attempts = tally
            if series_id in self.discarded:     # some records of this run are not the ones the ledger counts
                from .series.db import Store
                store = Store(project.root)
                try:
                    attempts = store.attempts(series_id)
                finally:
                    store.close()
            conclusion = conclude(project, series_id, attempts, family=self.family)
            if conclusion.verdict is not None:
                try:
                    conclusion.finding = write_finding_for(project, conclusion)
                except FindingsRefused as exc:   # the finding stays recorded in the database; nothing overwritten
                    refused = exc
                except OSError as exc:           # a full disk, an unwritable folder: the database has the finding
                    refused = unwritten(project, conclusion, exc)
        except (OSError, *storage.ERRORS) as exc:   # the decision could not be recorded: nothing is lost
            message = (f"pytest-aqven could not record the decision of series {series_id}: {type(exc).__name__}: "
                       f"{exc}. Free space on the project's disk (or make .aqven/ writable), then run the same "
                       f"command: it decides the series again from its recorded attempts, none runs again.")
            if verdict_id is not None:
                self._fire(session, verdict_id, "failed", message, [("aqven_verdict", "error"),
                                                                    ("aqven_series", series_id)])
            return
        except Exception as exc:  # our bug: the verdict test fails with its message, the session goes on
            message = f"pytest-aqven could not decide series {series_id}: {type(exc).__name__}: {exc}"
            if verdict_id is not None:
                self._fire(session, verdict_id, "failed", message, [("aqven_verdict", "error"),
                                                                    ("aqven_series", series_id)])
            return
        self.conclusions.append((f"{file_nodeid}::verdict", conclusion))
        from .report import data, junit
        entry = self._entry(project, conclusion, tally)
        self.entries.append(entry)
        self.config.hook.pytest_aqven_verdict(config=self.config, series=entry, verdict=entry["verdict"],
                                              cells=entry["cells"],
                                              finding_path=None if conclusion.finding is None else str(conclusion.finding))
        state = "open" if conclusion.verdict is None else conclusion.state      # a look's state is None
        failing = state == "invalid" or (conclusion.split == "holdout" and state in self.fail_on)
        text = conclusion.verdict.text if conclusion.verdict else conclusion.note
        if refused is not None:
            outcome, longrepr = "failed", (f"verdict {state}: {conclusion.verdict.text}\nthe finding is recorded in "
                                           f"the project database but its files were not written:\n{refused}")
        elif conclusion.verdict is None and not failing:
            outcome, longrepr = "skipped", (str(file_nodeid), None, f"Skipped: {conclusion.note}")
        elif failing:
            outcome, longrepr = "failed", f"verdict {state}: {text}"
        else:
            outcome, longrepr = "passed", None
        section = "\n".join([f"verdict {data.state_word(conclusion)}: {text}",
                             *(f"warning: {w}" for w in entry["warnings"]),
                             *([f"next: {entry['next']}"] if entry["next"] else [])])
        props = junit.verdict_properties(entry) + (junit.look_properties(look[1], look[2], look[3]) if look else [])
        junit.add_suite_properties(self.config, props, entry["experiment"])
        if verdict_id is not None:
            self._fire(session, verdict_id, outcome, longrepr, props, [("aqven verdict", section)])

    def _standing(self, standing: dict) -> None:
        """A held-out experiment whose cases are spent reported the finding that stands: its junit figures."""
        from .report import junit
        self.standing[standing["file_nodeid"]] = standing
        junit.add_suite_properties(self.config, junit.standing_properties(standing), standing["experiment"])

    def _entry(self, project: Project, conclusion: Conclusion, tally: SeriesTally) -> dict:
        from .report import data
        from .series.db import Store

        store = Store(project.root)
        try:
            row = store.series(conclusion.series_id) or {}
        finally:
            store.close()
        experiment = project.experiments.get(conclusion.experiment)
        layout = {"question": experiment.spec.question.kind if experiment else None,
                  "variants": row.get("variants", []), "cases": len(row.get("cases", [])), "repeats": row.get("repeats")}
        plan = None
        if experiment and conclusion.state in ("refuted", "inconclusive", "signal"):
            plan = data.plan_entry(quick_plan(project, experiment, conclusion.split, layout, self.family))
        return data.series_entry(conclusion, tally, layout, float(project.spec.research.spend_cap_usd), plan,
                                 _relative(Path(tally.root), self.config.rootpath))

    def _fire(self, session: pytest.Session, nodeid: str, outcome: str, longrepr, props: list,
              sections: list | None = None) -> None:
        """Report the collected verdict item `nodeid` as every reporter expects a test: logstart, the three
        phases, logfinish (its item was counted at collection: pytest's progress stays right)."""
        file_nodeid = nodeid.split("::")[0]
        location = (file_nodeid, 0, f"{Path(file_nodeid).parent.name} verdict")
        from .report import junit
        props = props if junit.per_testcase(self.config) else []
        hook = self.config.hook
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        for when in ("setup", "call", "teardown"):
            rep = pytest.TestReport(nodeid, location, {"aqven": 1}, outcome if when == "call" else "passed",
                                    longrepr if when == "call" else None, when, user_properties=props,
                                    sections=sections or [])
            hook.pytest_runtest_logreport(report=rep)
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:      # collection happens on workers: send the check warnings to the controller
            self.config.workeroutput["aqven_warnings"] = _check_warnings(self.config)
            self.config.workeroutput["aqven_discarded"] = self.discarded
            return
        path = self.config.getoption("aqven_json")
        if path:
            from .report import json_report

            json_report.write(Path(path), self.entries)
        summary = self.config.getoption("aqven_summary")
        if summary and (self.entries or self.unrun or self.standing):
            from .report import summary as markdown

            markdown.append(Path(summary), self.entries, self.unrun, sorted(self.standing.values(),
                                                                            key=lambda s: s["file_nodeid"]))

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        xml = getattr(config.option, "xmlpath", None)
        if xml and not self.is_worker and self.entries:
            from .report import junit

            junit.sort_testcases(Path(xml))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        """Under xdist the controller never collects: the selected verdicts and the launch plan lines come from
        the first worker's ids (every worker collects the same)."""
        if self.plans_shown:
            return
        self.plans_shown = True
        self.selected = [i for i in ids if i.split("@")[0].endswith("::verdict") and i.count("::") == 1]
        attempt_ids = [i for i in ids if i.split("::")[0].endswith("experiment.yaml") and i.count("::") == 3]
        if not attempt_ids:
            return
        from .project.loader import load_project
        from .report import terminal
        from .series.lifecycle import SeriesRun

        opt = self.config.getoption
        split = "holdout" if opt("aqven_holdout") else "dev"
        projects: dict[Path, Project] = {}
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        for file_nodeid in dict.fromkeys(i.split("::")[0] for i in attempt_ids):
            path = self.config.rootpath / file_nodeid
            if tr is None:
                continue
            root = path.parent.parent.parent
            try:
                project = projects.get(root) or projects.setdefault(root, load_project(root))
                self.progress.planned(len(attempt_ids), {str(root): float(project.spec.research.spend_cap_usd)})
                if self.config.get_verbosity() < 0:
                    continue
                run = SeriesRun(project, project.experiments[path.parent.name], split,
                                cases=opt("aqven_cases"), repeats=opt("aqven_repeats"))
                try:
                    tr.write_line(terminal.plan_line(path.parent.name, split,
                                                     run.launch_plan(self.family, simulate=False)))
                finally:
                    run.close_store()       # Python 3.13 warns of a database left open
            except Exception:  # the workers collected it and report its errors; a plan line is not worth a crash
                continue

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        output = getattr(node, "workeroutput", {})
        self.worker_warnings += [tuple(w) for w in output.get("aqven_warnings", [])]
        for series_id, n in output.get("aqven_discarded", {}).items():
            self.discarded[series_id] = self.discarded.get(series_id, 0) + n

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.is_worker:
            from .report import terminal
            if self.tallies:
                _series_spend(terminalreporter, self.tallies, self.discarded)
            collect = _collect_module()
            terminal.launch_plans(terminalreporter, self.config.stash.get(collect.LAUNCH_PLANS, []) if collect else [],
                                  self.config.stash.get(collect.LAUNCH_NOTES, {}) if collect else {})
            terminal.check_warnings(terminalreporter, _check_warnings(self.config) + self.worker_warnings)
            terminal.summary(terminalreporter, self.entries, self.unrun)
            terminal.standing(terminalreporter, list(self.standing.values()))
            if self.looks:
                from .report import look
                for experiment, split, records, kinds in self.looks:
                    look.table(terminalreporter, experiment, split, records, kinds)


# what deciding and writing findings import (numpy, scipy, the findings writer): imported in a background
# thread from the first attempt record on, while the attempts run, so the session end only decides
DECIDING = ("series.conclude", "stats.verdicts", "stats.pairs", "stats.intervals", "series.findings")


def _relative(path: Path, start: Path) -> str:
    import os
    return Path(os.path.relpath(path, start)).as_posix()


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ")


def _tally_for(record: dict) -> SeriesTally:
    """A new series' tally; a look's keeps its records (the question kind is in the series' database row;
    unknown: kept too)."""
    from .series.tally import SeriesTally

    kind = _question_kind(record["root"], record["series_id"])
    return SeriesTally(record["series_id"], record["root"], record["file_nodeid"], record["experiment"],
                       record["split"], keep_records=kind in ("look", None))


def _question_kind(root: str, series_id: str) -> str | None:
    from . import storage

    try:
        with storage.peek(Path(root)) as db:
            return None if db is None else db.series_question(series_id)
    except storage.ERRORS:
        return None


def _import_in_background(modules: tuple[str, ...]) -> None:
    def run() -> None:
        try:
            for name in modules:
                import_module(f"{__package__}.{name}")
            import_module("scipy.special")
        except Exception:   # the session end imports them again and reports what fails
            pass
    threading.Thread(target=run, name="aqven-imports", daemon=True).start()


def _check_warnings(config: pytest.Config) -> list[tuple[str, str]]:
    collect = _collect_module()
    return collect.check_warnings(config) if collect else []
