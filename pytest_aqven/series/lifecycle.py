"""A series as one process sees it: open or continue it, run or reuse its attempts."""
from __future__ import annotations

from functools import cached_property

from .. import stats, storage
from ..engine.checks import CheckInvalid, CompiledCheck
from ..experiments import inputs, plan as planning
from ..experiments.checks import compile_check
from ..experiments.judges import JudgeCheck
from ..project.model import RunnableExperiment, RunnableProject
from ..providers import registry
from ..providers.base import ProviderError
from ..record import AttemptRecord
from ..stats.model import experiment_salt
from . import ledger
from .cap import SeriesCap, series_cap
from .db import HeldOutTaken, Store, unpublished_series
from .ledger import apply_cap, resume
from .plans import SearchCache
from .spent import Spent, Standing
from .to_stats import question_of, to_attempt

BIG_DATASET = 2000       # more selected cases than this without plan.cases: the launch plan warns


class SeriesRun:
    def __init__(self, project: RunnableProject, experiment: RunnableExperiment, split: str, *,
                 cases: int | None = None, repeats: int | None = None, cap: SeriesCap | None = None,
                 fresh_for: str | None = None, cassettes: str | None = None, run: str | None = None,
                 respend: bool = False, spent: Spent | None = None) -> None:
        """`spent`: held-out, the cases that already gave a finding (findings.spent.spent, which reads the
        finding files); a held-out series needs it, so that its cases are spent once."""
        self.project = project
        self.experiment = experiment
        self.plan = planning.plan(project, experiment, split, cases, repeats)
        self.standing: Standing | None = None     # held-out: the finding that stands instead of a new series
        self.respent_from: list[str] = []           # held-out, --aqven-respend-holdout: the findings run again
        self.respend = respend
        self.spent = spent
        self._taken: HeldOutTaken | None = None     # held-out cases another series took when this one opened
        if split == "holdout":
            if spent is None:
                raise TypeError("a held-out SeriesRun needs spent=findings.spent.spent(project, experiment)")
            self._spend_once(spent, cases, repeats, fresh=fresh_for is not None, respend=respend)
        self.cap = cap or series_cap(project.root, project.spec, experiment_cap=experiment.spec.cap_usd)
        self.fresh_for = fresh_for          # --aqven-new-series: the run token that may continue a series
        self.run = run                      # this run's token (the same on every xdist worker): joins its series
        self.created = False
        self._series_id: str | None = None
        self.cassettes = cassettes          # record | replay | record_missing | None (live)

    def _spend_once(self, used: Spent, cases: int | None, repeats: int | None, *, fresh: bool,
                    respend: bool) -> None:
        """Held-out cases are spent once (series/spent.py): a rerun continues an open held-out series or
        reports the finding that stands; --aqven-new-series runs only fresh held-out cases;
        --aqven-respend-holdout runs the spent ones again, recorded in the new finding."""
        if not used:
            return
        salt = experiment_salt(self.project.package, self.experiment.id)
        if respend:
            self.respent_from = used.overlapping([c.name for c in self.plan.cases], salt)
            return
        if not fresh and not used.open_series:
            self.standing = Standing(self.experiment, used, self.plan.available)
            return
        names = planning.half(self.project, self.experiment, "holdout")
        self.plan = planning.plan(self.project, self.experiment, "holdout", cases, repeats,
                                  skip=used.among(names, salt))
        if not self.plan.cases:
            self.standing = Standing(self.experiment, used, len(names), fresh_wanted=True)

    @cached_property
    def store(self) -> Store:
        storage.preflight(self.project.root)
        store = Store(self.project.root)
        store.own(self.project.package)
        return store

    def close_store(self) -> None:
        """Write the last batch and close, so no WAL file is left behind; a later use opens it again."""
        store = self.__dict__.pop("store", None)
        if store is not None:
            store.close()

    @cached_property
    def providers(self) -> dict:
        out: dict = {}
        for spec in self.project.spec.providers:
            try:
                out[spec.id] = registry.build(spec, package=self.project.package, root=self.project.root,
                                              cassettes=self.cassettes)
            except ProviderError as exc:
                out[spec.id] = exc
        return out

    @cached_property
    def checks(self) -> list[CompiledCheck | JudgeCheck] | CheckInvalid:
        try:
            return [compile_check(c, self.project, self.experiment) for c in self.experiment.spec.checks]
        except CheckInvalid as exc:
            return exc

    def start(self) -> planning.Snapshot:
        """The series start in this process: import the code and build the providers and checks it runs
        (their YAML read, their modules imported), then read every input once. Attempts run from that."""
        from ..experiments.judges import JudgeCheck
        from ..providers.secrets import register_environment
        register_environment(self.project.root)     # keys user code may read itself: scrubbed like resolved ones
        planning.import_code(self.project, self.plan)
        self.providers          # noqa: B018 - built now: a function provider's module is imported at the start
        checks = self.checks    # compiled now: their modules imported, a judge's YAML read
        taken = planning.take(self.project, self.plan)
        for check in checks if isinstance(checks, list) else []:
            if isinstance(check, JudgeCheck):   # its prompt is an input too
                check.sources = taken.sources
        self.plan.sources = taken.sources
        if taken.stale:
            taken.sources.conflict = (
                f"inputs changed after the project was loaded, before the series started: "
                f"{', '.join(taken.stale[:3])}{' ...' if len(taken.stale) > 3 else ''}; rerun without editing them")
        return taken

    @property
    def series_id(self) -> str:
        """Opened on first use, in a transaction, so every process of the run gets the same series."""
        if self._taken is not None:
            raise self._taken
        if self._series_id is None:
            taken = self.start()
            snapshot = taken.hashes
            spec = self.plan.spec
            scope = {"experiment": self.experiment.id, "split": self.plan.split, "repeats": self.plan.repeats,
                     "cases": [c.name for c in self.plan.cases], "variants": list(self.plan.variants)}
            key = planning.canonical_hash({**scope, "snapshot": snapshot})
            # a held-out series decided but never published (a crash): continue it, never run the half again
            self._series_id = unpublished_series(self.store, key)
            if self._series_id is not None:
                return self._series_id
            cap = self.cap
            record = {"experiment_id": self.experiment.id, "split": self.plan.split, "repeats": self.plan.repeats,
                      "cases": [c.name for c in self.plan.cases], "variants": list(self.plan.variants),
                      "snapshot": snapshot, "package": self.project.package,
                      "fingerprints": taken.fingerprints,
                      "cap_usd": str(cap.cap_usd), "project_cap_usd": str(cap.project_cap_usd),
                      "project_cap_source": cap.project_cap_source, "cap_from": cap.explicit,
                      "needs_approval": cap.needs_approval}
            if self.respent_from:       # held-out cases that gave a finding, run again on purpose: the finding says so
                record["respent_from"] = self.respent_from
            if cap.needs_approval:      # seeds: a cap above the project cap waits for approval before anything runs
                record["pause"] = {"reason": "cap_above_project", "spent_usd": 0.0}
            try:
                self._series_id, self.created = self.store.open_series(
                    plan_key=key, experiment_id=self.experiment.id, flow_id=spec.subject.flow,
                    dataset_id=spec.cases.dataset, split=self.plan.split, question=spec.question.kind,
                    record=record, status="awaiting_approval" if cap.needs_approval else "running",
                    fresh_for=self.fresh_for, scope_key=planning.canonical_hash(scope), run=self.run,
                    spend_once=ledger.LEASE_SECONDS if self.plan.split == "holdout" and not self.respend else None)
            except HeldOutTaken as exc:
                self._taken_by(exc)
                raise
            if not self.created:
                series = self.store.known_series(self._series_id)
                recorded = series["snapshot"]
                if recorded != snapshot:    # another process of this run started it on other inputs
                    differ = sorted(k for k in snapshot if snapshot[k] != recorded.get(k))
                    files = inputs.differing(series.get("fingerprints") or {}, taken.fingerprints)
                    taken.sources.conflict = (
                        f"the inputs changed while the series ran: this process read other {', '.join(differ)} "
                        f"than the series recorded at its start"
                        + (f" ({inputs.named(files, self.project.root)} changed)" if files else "")
                        + "; rerun without editing the project")
            if not self.created and cap.explicit:
                apply_cap(self.store, self._series_id, cap)
            if not self.created:        # stopped by an earlier run at a permanent provider error: run after the fix
                resume(self.store, self._series_id, self.run)
        return self._series_id

    def _taken_by(self, taken: HeldOutTaken) -> None:
        """Another run took this series' held-out cases after collection checked them (runs that overlap, in
        this checkout or another on the same store): its finding stands, or its run decides them; nothing
        of this series runs."""
        self._taken = taken
        if taken.running:
            self.standing = Standing.running(self.experiment, taken.series_id)
        else:
            used = self.spent.reread() if self.spent is not None and self.spent.reread else Spent()
            self.standing = Standing(self.experiment, used, self.plan.available)

    def warnings(self) -> list[str]:
        """What the launch plan says besides the numbers."""
        out = []
        if self.experiment.spec.plan.cases is None and self.plan.available > BIG_DATASET:
            out.append(f"plan.cases is unset and {self.plan.available} cases are selected: the series runs every "
                       f"one of them ({self.plan.attempts} attempts); set plan.cases in experiment.yaml or pass "
                       f"--aqven-cases N")
        return out

    def launch_plan(self, family: str = "robust", *, simulate: bool = True, observed: str | None = None,
                    store: Store | None = None) -> stats.LaunchPlan:
        """Attempts and the recommended cases; history only from a database that already exists: the series
        `observed` (every attempt of it: a verdict's own figure quotes its own rate), else the experiment's latest
        finished series, read from `store` when the caller has one open (else the run's own). The simulated
        search is read from .aqven/plans/, else run when `simulate` and cached."""
        history = []
        if storage.exists(self.project.root):
            store = store or self.store
            records = store.attempts(observed) if observed else store.history(self.experiment.id)
            history = [to_attempt(AttemptRecord.from_wire(r)) for r in records]
        spec = self.experiment.spec
        return stats.launch_plan(question_of(spec), cases=len(self.plan.cases), repeats=self.plan.repeats,
                                 variants=len(self.plan.variants), available=self.plan.available,
                                 check_kinds={c.id: c.kind for c in spec.checks}, history=history, family=family,
                                 simulate=simulate, cache=SearchCache(self.project.root))
