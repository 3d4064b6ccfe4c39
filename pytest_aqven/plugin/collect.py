"""The node tree: experiment file -> variant -> case -> one item per repeat."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from ..api.check import check_project
from ..check.context import internal_error
from ..check.scope import collection_errors
from ..codes import SchedulerKind
from ..diagnostics import Diagnostic
from ..experiments.plan import PlanError
from ..findings.publish import repair as repair_findings
from ..findings.spent import spent_for
from ..project.loader import Project, load_project, runnable
from ..record import AttemptRecord
from ..report import attempts
from ..series.cap import CapError, series_cap
from ..series.lifecycle import SeriesRun
from ..stats.model import case_key
from ..storage import StorageError
from ..storage.disk import DiskFull
from . import internals, junit
from .running import store_away

if TYPE_CHECKING:
    from concurrent.futures import Future

    from _pytest._code.code import TerminalRepr, TracebackStyle

    from ..project.specs import CaseSpec
    from ..series.scheduler import AttemptTurn, Scheduler

PROJECTS = pytest.StashKey[dict]()
LAUNCH_PLANS = pytest.StashKey[list]()
HALTED = "aqven_halted"     # the keyword of an attempt skipped because its series stopped at a permanent error
CHECK_FAILED = pytest.StashKey[set]()     # node ids of experiment files that aqven check errors stopped
SCHEDULER: pytest.StashKey[Scheduler] = pytest.StashKey()
RUN_TOKEN = pytest.StashKey[str]()        # the same on every xdist worker of one run
LAUNCH_NOTES = pytest.StashKey[dict]()    # experiment id -> lines the launch plan adds (cap, warnings)
# xdist modes (and "no": one process) in which the items queued on a worker are all run by that worker
KEEPS_ITS_QUEUE = frozenset({"no", "load", "loadscope", "loadfile", "loadgroup", "each"})
Parent = TypeVar("Parent", bound=pytest.Collector)
R = TypeVar("R")


def parent_of(node: pytest.Item | pytest.Collector, kind: type[Parent]) -> Parent:
    """The node's parent, of the kind this tree gives it (pytest types `parent` as any node, or None)."""
    parent = node.parent
    if not isinstance(parent, kind):
        raise TypeError(f"{node.nodeid}: a {type(node).__name__} under {type(parent).__name__}, not {kind.__name__}")
    return parent


class LoadedProject:
    def __init__(self, root: Path) -> None:
        try:
            self.project: Project = load_project(root)
        except Exception as exc:  # a loader bug: a collection error with its message, never a traceback
            self.project = Project(root)
            self.diagnostics = [internal_error("aqven.yaml", "loading the project", exc)]
            self.experiment_diagnostics: dict[str, list[Diagnostic]] = {}
            return
        try:   # publish what a crash left recorded in the database but unwritten, before checking the files
            repair_findings(self.project)
        except OSError:
            pass   # a read-only tree: aqven check reports the missing files
        self.diagnostics, self.experiment_diagnostics = check_project(self.project)

    @property
    def errors(self) -> list[Diagnostic]:
        return sorted((d for d in self.diagnostics if d.severity == "error"), key=Diagnostic.sort_key)

    def warnings(self) -> list[Diagnostic]:
        all_ = self.diagnostics + [d for ds in self.experiment_diagnostics.values() for d in ds]
        return sorted((d for d in all_ if d.severity == "warning"), key=Diagnostic.sort_key)


def loaded(config: pytest.Config, root: Path) -> LoadedProject:
    cache = config.stash.setdefault(PROJECTS, {})
    if root not in cache:
        cache[root] = LoadedProject(root)
    return cache[root]


def check_warnings(config: pytest.Config) -> list[tuple[str, str]]:
    """(module root, rendered warning) of every project this process loaded, as `aqven check` prints them."""
    return [(str(root), d.render()) for root, lp in config.stash.get(PROJECTS, {}).items() for d in lp.warnings()]


def _render(diagnostics: list[Diagnostic]) -> str:
    return "\n".join(d.render() for d in sorted(diagnostics, key=Diagnostic.sort_key))


def cassette_mode(config: pytest.Config) -> str | None:
    for option, mode in (("aqven_record", "record"), ("aqven_record_missing", "record_missing"),
                         ("aqven_replay", "replay")):
        if config.getoption(option):
            return mode
    return None


class ExperimentFile(pytest.File):
    def __init__(self, *, root: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.root = root
        self.standing: dict | None = None     # set when a held-out run finds the experiment's cases spent
        self.experiment_id = self.path.parent.name
        self.add_marker(pytest.mark.aqven)
        if self.config.pluginmanager.hasplugin("timeout"):
            # pytest-timeout would fail an attempt mid-call (its calls paid, its record lost): every call of an
            # attempt has its own time limit instead (limits.seconds), which ends it as the infra error timeout
            self.add_marker(pytest.mark.timeout(0))
        self.extra_keyword_matches.add(self.experiment_id)

    def collect(self):
        if _deselected(self):           # -k / -m that no attempt of it can match: plan and build nothing
            return
        lp = loaded(self.config, self.root)
        experiment = lp.project.experiments.get(self.experiment_id)
        own = lp.experiment_diagnostics.get(self.experiment_id, [])
        if experiment is None:
            errors = lp.errors
        else:
            errors = collection_errors(lp.project, experiment, lp.diagnostics, own)
        if errors:
            self.config.stash.setdefault(CHECK_FAILED, set()).add(self.nodeid)
            text = _render(errors)
            if any(e not in own for e in errors):  # the project's: each experiment says it is stopped (xdist shows
                text += f"\nexperiment {self.experiment_id} cannot run until the project's errors above are fixed"
            raise self.CollectError(text)           # one of equal collection errors, however many files raised it)
        project, experiment = runnable(lp.project), lp.project.runnable_experiment(self.experiment_id)  # check passed
        opt = self.config.getoption
        split = "holdout" if opt("aqven_holdout") else "dev"
        if split == "holdout" and experiment.spec.question.kind == "look":   # nothing runs, nothing is spent
            yield HeldOutLook.from_parent(self, name="look")
            return
        try:
            cap = series_cap(self.root, project.spec, option=opt("aqven_cap"),
                             experiment_cap=experiment.spec.cap_usd)
            self.series = SeriesRun(project, experiment, split, cases=opt("aqven_cases"),
                                    repeats=opt("aqven_repeats"), cap=cap,
                                    fresh_for=run_token(self.config) if opt("aqven_new_series") else None,
                                    cassettes=cassette_mode(self.config), run=run_token(self.config),
                                    respend=opt("aqven_respend_holdout"),
                                    spent=spent_for(project, experiment, split))
        except PlanError as exc:
            raise self.CollectError(f"{project.rel(experiment.file)}: error: {exc}") from None
        except CapError as exc:
            raise self.CollectError(f"error: {exc}") from None
        if self.series.standing is not None:        # held-out cases spent once: the finding stands, nothing runs
            self.standing = self.series.standing.entry(self.nodeid)
            yield VerdictItem.from_parent(self, name="verdict")
            return
        self.config.stash.setdefault(LAUNCH_NOTES, {})[self.experiment_id] = [cap.describe(), *self.series.warnings()]
        for variant in self.series.plan.variants:
            yield VariantNode.from_parent(self, name=variant)
        yield VerdictItem.from_parent(self, name="verdict")


HELD_OUT_LOOK = ("a look is skipped under --aqven-holdout: it shows every case one by one, and held-out cases are "
                 "never shown nor spent on a look; run it on the working cases (without --aqven-holdout)")


class HeldOutLook(pytest.Item):
    """A look under --aqven-holdout: one skipped item saying why, no series, no attempt."""

    def runtest(self) -> None:
        raise pytest.skip.Exception(HELD_OUT_LOOK, _use_item_location=True)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{parent_of(self, ExperimentFile).experiment_id} look"


def launch_plans(session: pytest.Session) -> list:
    """(experiment, split, launch plan) of each experiment with a selected attempt, so -k and -m cost
    nothing: the closed form, or the simulated search when `aqven plan` cached it (docs/performance.md)."""
    config = session.config
    family = config.option.aqven_intervals
    files = {item.experiment_file.nodeid: item.experiment_file for item in session.items
             if isinstance(item, AttemptItem)}
    return [(f.experiment_id, f.series.plan.split, f.series.launch_plan(family, simulate=False))
            for f in files.values()]


class VariantNode(pytest.Collector):
    def collect(self):
        series = parent_of(self, ExperimentFile).series
        for case in series.plan.cases:
            yield CaseNode.from_parent(self, name=node_name(series, case.name), case=case)


def node_name(series: SeriesRun, case: str) -> str:
    """A held-out case is never shown by name, so its node is named by the salted key its finding uses."""
    if series.plan.split != "holdout":
        return case
    from ..stats.model import experiment_salt
    return "case-" + case_key(experiment_salt(series.project.package, series.experiment.id), case)


class CaseNode(pytest.Collector):
    def __init__(self, *, case: CaseSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def collect(self):
        for repeat in range(1, parent_of(parent_of(self, VariantNode), ExperimentFile).series.plan.repeats + 1):
            yield AttemptItem.from_parent(self, name=str(repeat), repeat=repeat)


class AttemptItem(pytest.Item):
    """One attempt: a measurement, not a test. Failed checks are xfail, infrastructure errors skips."""

    def __init__(self, *, repeat: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.repeat = repeat
        self.record: AttemptRecord | None = None
        self.details: dict | None = None      # what pytest-html shows; None when held out
        # the tree never changes: read once here (the attempts' loop reads them many times per attempt)
        case = parent_of(self, CaseNode)
        variant = parent_of(case, VariantNode)
        self.case, self.variant = case.case, variant.name
        self.experiment_file = parent_of(variant, ExperimentFile)

    def schedule(self, scheduler: Scheduler) -> Future[AttemptTurn]:
        return scheduler.submit(*self.attempt)

    @property
    def attempt(self) -> tuple[SeriesRun, str, CaseSpec, int]:
        """(series run, variant, case, repeat): what the scheduler runs for this item."""
        return self.experiment_file.series, self.variant, self.case, self.repeat

    def look_further(self, scheduler: Scheduler, reach: int) -> int:
        """This attempt waits for another runner (a second pytest on the same series) that claimed it: while
        this process has free slots, schedule attempts beyond the look-ahead, so it takes the work nobody
        claimed instead of idling until the other runner's attempts end. Returns how far it now looks."""
        series, variant = self.experiment_file.series, self.variant
        if not (scheduler.held_by_another_runner(series, variant, self.case, self.repeat)
                and scheduler.has_free_slots()):
            return reach
        reach += scheduler.concurrency
        for item in upcoming(self, 2 * scheduler.concurrency + 2 + reach):
            if isinstance(item, AttemptItem):
                item.schedule(scheduler)
        return reach

    def next_attempts(self, count: int) -> list[tuple[str, str, int]]:
        """(variant, case name, repeat) of the next attempts of this series that this process runs; none
        under a distribution mode that may give a queued item to another worker (worksteal: a claim made for
        it here would hold that worker until given back, Scheduler.AHEAD_SECONDS later)."""
        if internals.dist_mode(self.config) not in KEEPS_ITS_QUEUE:
            return []
        file = self.experiment_file
        return [(item.variant, item.case.name, item.repeat) for item in upcoming(self, count + 1)[1:]
                if isinstance(item, AttemptItem) and item.experiment_file is file]

    def forget(self, scheduler: Scheduler) -> None:
        """After its reports: its record, the scheduler's job and trace go (memory flat in attempts)."""
        scheduler.forget(self.experiment_file.series, self.variant, self.case, self.repeat)
        self.record = self.details = None

    def runtest(self) -> None:
        file = self.experiment_file
        sched = scheduler(self.config)
        try:
            outcome = sched.run_here(file.series, self.variant, self.case, self.repeat,
                                     lambda: self.next_attempts(sched.claim_ahead)) \
                if sched.inline else None     # concurrency 1: here and now, no thread hops, nothing run ahead
            # another runner works on this series: from now on look ahead for work as a higher concurrency does
            if outcome is not None and outcome.kind == SchedulerKind.HELD:
                sched.inline, outcome = False, None
            if outcome is None:
                outcome = wait(self.schedule(sched), lambda reach: self.look_further(sched, reach))
        except StorageError as exc:     # the store went away for longer than the run waits: one message, a stop
            store_away(self.session, str(exc), full=isinstance(exc, DiskFull))
        if outcome.record is None:          # paused, halted, cancelled or stopped: says what a person does next
            if outcome.kind == SchedulerKind.HALTED:    # the controller's verdict is invalid (keywords travel)
                self.keywords[HALTED] = 1
            raise pytest.skip.Exception(outcome.why, _use_item_location=True)
        record, reused = outcome.record, outcome.kind == SchedulerKind.REUSED
        if reused and junit.per_testcase(self.config):
            self.user_properties.append(("aqven_reused", "true"))
        trace = record.trace or {}
        shown: dict[str, Any] = {"output": trace.get("output")} if file.series.plan.spec.question.kind == "look" \
            and record.split == "dev" else {}          # a look shows each working case's output (-v)
        self.record = record = dataclasses.replace(record, trace=None, reused=reused, root=str(file.root),
                                                   file_nodeid=file.nodeid, **shown)
        if getattr(self.config.option, "htmlpath", None):      # only pytest-html shows them (and xdist ships them)
            self.details = attempts.details(record, trace, self.case.inputs)
        if record.outcome in attempts.INFRA:
            raise pytest.skip.Exception(attempts.reason(record), _use_item_location=True)
        if not record.passed:
            pytest.xfail(attempts.reason(record))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None) -> str | TerminalRepr:
        """The attempt's own story (failed checks with reasons, or its error), not pytest's traceback: a
        traceback with the source of every frame cost more than the attempt itself, and said nothing."""
        if self.record is not None:
            return attempts.longrepr(self.record)
        if isinstance(excinfo.value, pytest.xfail.Exception):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        case = parent_of(self, CaseNode)
        return self.experiment_file.path, 0, f"{self.experiment_file.experiment_id} {parent_of(case, VariantNode).name} " \
                                             f"{case.name} #{self.repeat}"


class VerdictItem(pytest.Item):
    """`<experiment file>::verdict`, after the experiment's attempts: collected like any test (so --collect-only,
    node ids, -k, -m, --lf, --ff, --sw and test splitters see it), but never run where it is collected. The
    process that sees every attempt's report (the only one, or the xdist controller, which collects nothing)
    decides the series after the run loop and reports this node id then (plugin.VerdictReporter).

    The one exception: a held-out experiment whose cases are spent runs nothing, and its verdict is the finding
    that stands, known at collection: that item runs where it is collected and reports it (its report carries
    the finding to the controller: `aqven_standing`), failing as that verdict fails."""

    @property
    def standing(self) -> dict | None:
        return parent_of(self, ExperimentFile).standing

    def runtest(self) -> None:      # only a standing verdict runs: plugin.pytest_runtest_protocol skips the others
        standing = self.standing
        if standing is None:
            raise RuntimeError("a verdict is reported after the run loop, not run")
        state = standing["state"]
        text = f"verdict {state} (the finding that stands; nothing ran): {standing['statement']}\n{standing['why']}"
        self.add_report_section("call", "aqven verdict", f"verdict {state} (the finding that stands): "
                                                          f"{standing['finding']}")
        from . import junit
        if junit.per_testcase(self.config):
            self.user_properties += junit.standing_properties(standing)
        reporter = self.config.pluginmanager.get_plugin("aqven-verdicts")
        if reporter is None:
            raise RuntimeError("the aqven-verdicts plugin is not registered")
        if state in reporter.fail_on:
            raise StandingVerdict(text)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, StandingVerdict):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:       # the failure's heading: the experiment's, as the decided verdict's report has
        return self.path, 0, f"{parent_of(self, ExperimentFile).experiment_id} verdict"


class StandingVerdict(Exception):
    """The finding that stands fails the run, as the verdict that wrote it did."""


def run_token(config: pytest.Config) -> str:
    """The same on every xdist worker of one run (xdist's testrunuid), new for every run."""
    if RUN_TOKEN not in config.stash:
        config.stash[RUN_TOKEN] = internals.run_uid(config) or __import__("uuid").uuid4().hex
    return config.stash[RUN_TOKEN]


def scheduler(config: pytest.Config) -> Scheduler:
    """This process's attempt scheduler, started on first use."""
    if SCHEDULER not in config.stash:
        from ..series.scheduler import Scheduler
        config.stash[SCHEDULER] = Scheduler(config.option.aqven_concurrency)
    return config.stash[SCHEDULER]


def new_in_window(session: pytest.Session, window: list[pytest.Item], keep: int = 0) -> list[pytest.Item]:
    """The items of the look-ahead window after the previous window's last one, so each item is scheduled
    once instead of 2N + 2 times (a cost per attempt that grew with N). None while more than `keep` items
    scheduled earlier are ahead of the window's first: the window then moves in steps of about `keep` items,
    one hand-over to the scheduler each instead of one per item."""
    last = session.stash.get(_WINDOW_END, None)
    for i in range(len(window) - 1, -1, -1):
        if window[i] is last:
            if i > keep:
                return []
            session.stash[_WINDOW_END] = window[-1]
            return window[i + 1:]
    session.stash[_WINDOW_END] = window[-1] if window else None
    return window       # the first window, or one that moved otherwise: all of it (scheduling is idempotent)


def upcoming(item: pytest.Item, count: int) -> list[pytest.Item]:
    """This item and the next ones this process runs: under xdist only those the worker was given."""
    session = item.session
    worker = session.stash.get(_WORKER, False)
    if worker is False:
        worker = session.stash[_WORKER] = internals.worker_interactor(item.config)
    if worker is not None:
        indices = internals.queued_indices(worker)
        return [item, *(session.items[i] for i in indices[:count] if isinstance(i, int))]
    positions = session.stash.get(_POSITIONS, None)
    if positions is None:
        positions = session.stash[_POSITIONS] = {id(it): i for i, it in enumerate(session.items)}
    start = positions.get(id(item))
    return [item] if start is None else session.items[start:start + count]


_WORKER = pytest.StashKey[object]()     # xdist's WorkerInteractor, or None: looked up once
_POSITIONS = pytest.StashKey[dict]()
_WINDOW_END = pytest.StashKey[pytest.Item | None]()


def wait(future: Future[R], on_wait: Callable[[int], int] | None = None) -> R:
    """Block for an attempt, in short waits so Ctrl-C reaches pytest at once; `on_wait(reach)` runs between
    them and returns the reach it gets next."""
    import concurrent.futures
    reach = 0
    while True:
        try:
            return future.result(timeout=0.25)
        except concurrent.futures.TimeoutError:
            if on_wait is not None:
                reach = on_wait(reach)


def _deselected(file: ExperimentFile) -> bool:
    """True only when -m or -k surely deselects every attempt of this file. Its items carry the file's markers
    and keywords plus their variant, case and repeat names, unknown before planning: -k is evaluated for every
    truth value of the names the file does not decide, and the file is skipped only if all of them deselect."""
    KeywordMatcher, Expression = internals.mark_expressions()
    try:
        marks = {m.name for m in file.iter_markers()}
        mexpr = file.config.option.markexpr
        if mexpr:
            def mark_matcher(name: str, /, **kwargs: Any) -> bool:
                if kwargs:
                    raise LookupError          # marks with arguments: let pytest decide per item
                return name in marks
            if not Expression.compile(mexpr).evaluate(mark_matcher):
                return True
        kexpr = file.config.option.keyword
        if not kexpr or kexpr.startswith("-") or kexpr.endswith(":"):
            return False
        known = KeywordMatcher.from_item(file)
        expression = Expression.compile(kexpr)
        unknown: list[str] = []
        for _ in range(64):
            def key_matcher(name: str, /, **kwargs: Any) -> bool:
                if kwargs:
                    raise LookupError
                if known(name):
                    return True
                if name not in unknown:
                    unknown.append(name)
                return assignment.get(name, False)
            seen = len(unknown)
            assignment: dict[str, bool] = {}
            for bits in range(2 ** max(seen, 0)):
                assignment = {n: bool(bits >> i & 1) for i, n in enumerate(unknown[:seen])}
                if expression.evaluate(key_matcher):
                    return False
                if len(unknown) > seen:
                    break
            else:
                return True
            if len(unknown) > 8:
                return False
        return False
    except Exception:       # an expression we do not model: collect as usual
        return False


def rerun_failed_verdicts(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--lf, --ff: a failed verdict's attempts count as last failed too; --sw continues from its experiment's
    first attempt (a verdict decides only with its attempts)."""
    lastfailed = internals.last_failed(config)
    if lastfailed is not None:
        failed = {str(key).rsplit("::", 1)[0] for key in lastfailed if str(key).endswith("::verdict")}
        for item in items:
            if isinstance(item, AttemptItem) and item.experiment_file.nodeid in failed:
                lastfailed[internals.item_key(item)] = True
    info = internals.stepwise_info(config)
    last = info.last_failed if info is not None else None
    if last is not None and str(last).endswith("::verdict"):
        file_nodeid = str(last).rsplit("::", 1)[0]
        first = next((i for i in items if isinstance(i, AttemptItem) and i.experiment_file.nodeid == file_nodeid),
                     None)
        if first is not None:
            info.last_failed = internals.item_key(first) if not isinstance(last, str) else first.nodeid


def stop_early_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--aqven-stop-early: each experiment's attempts case by case in the betting order, every variant and repeat
    of a case together, so that the complete prefixes of that order a series looks at come as early as they can
    (series/stopping.py). The attempts take the places the experiment's attempts held; the rest stays."""
    if not config.option.aqven_stop_early:
        return
    from ..series.stopping import run_order
    from ..stats.model import experiment_salt
    places = [i for i, item in enumerate(items) if isinstance(item, AttemptItem)]
    attempts = [item for item in items if isinstance(item, AttemptItem)]
    files: dict[ExperimentFile, dict[str, int]] = {}    # each file, in order of its first attempt: its case ranks
    for item in attempts:
        file = item.experiment_file
        if file not in files:
            series = file.series
            salt = experiment_salt(series.project.package, series.experiment.id)
            files[file] = {name: rank for rank, name in enumerate(run_order(salt, [c.name for c in series.plan.cases]))}
    position = {file: i for i, file in enumerate(files)}

    def key(item: AttemptItem) -> tuple:
        file = item.experiment_file
        return position[file], files[file][item.case.name]
    for place, item in zip(places, sorted(attempts, key=key)):     # stable: variants and repeats keep their order
        items[place] = item
