"""After the last attempt: the verdict of a series from its attempts (folded in a SeriesTally as they came),
and its end in the database, in the transaction that records its finding (publish.record)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .. import stats, storage
from ..experiments import inputs, plan as planning
from ..experiments.checks import check_scales
from ..project.loader import Project
from ..record import AttemptRecord
from ..series.db import Store, planned_attempts
from ..series.tally import SeriesTally, TallyTable
from ..series.to_stats import question_of
from .judges import unvalidated


@dataclass
class Conclusion:
    experiment: str
    series_id: str
    split: str
    done: int
    total: int
    verdict: stats.Verdict | None = None      # None while the series is incomplete
    finding: Path | None = None
    note: str | None = None                   # why there is no verdict, or what else to know
    facts: stats.SeriesFacts | None = None    # what the verdict was decided with
    table: TallyTable | None = None           # the samples decided from: cases named by their salted key
    question: stats.Threshold | stats.Pair | stats.Look | None = None   # the stats question decided
    spend_usd: float = 0.0                    # what the priced calls cost
    unpriced_calls: int = 0                   # calls nothing priced: spend_usd is then a lower bound
    halted: bool = False                      # stopped at a permanent provider error: invalid, with no finding
    unrecorded: str | None = None             # the disk was full: decided and shown, recorded by the same command

    @property
    def state(self) -> str | None:
        return self.verdict.state if self.verdict else None

    def decided(self) -> tuple[stats.Threshold | stats.Pair | stats.Look, stats.Verdict, stats.SeriesFacts,
                               TallyTable]:
        """The question, verdict, facts and table of a decided series (what a finding is built from)."""
        if self.question is None or self.verdict is None or self.facts is None or self.table is None:
            raise ValueError(f"series {self.series_id} is not decided")
        return self.question, self.verdict, self.facts, self.table


def conclude(project: Project, series_id: str, attempts: SeriesTally | list[AttemptRecord], *,
             family: str = "robust") -> Conclusion:
    """Decide a series whose attempts all finished; leave it running (no verdict) when some did not.
    `attempts`: its SeriesTally, or its records (one per attempt). `project` is loaded after the attempts
    ran: the snapshot taken now is compared with the one at the start."""
    tally = attempts if isinstance(attempts, SeriesTally) else SeriesTally.of(attempts)
    store = Store(project.root)
    try:
        series = store.known_series(series_id)
        total = planned_attempts(series)
        conclusion = Conclusion(series["experiment_id"], series_id, series["split"], tally.done, total)
        conclusion.spend_usd = tally.spend
        conclusion.unpriced_calls = tally.unpriced_calls
        if tally.done < total:
            conclusion.note = (f"{tally.done} of {total} attempts ran in this session; the series stays open "
                               f"until a run selects every attempt of it and its verdict (`-k {tally.experiment}`, "
                               "or its experiment.yaml), which reuses those recorded")
            if series["status"] == "awaiting_approval":
                from ..series.ledger import PROVIDER_UNUSABLE, pause_text, spend
                with store.transaction() as db:
                    conclusion.note = pause_text(series_id, series, spend(db, series_id))
                conclusion.halted = (series.get("pause") or {}).get("reason") == PROVIDER_UNUSABLE
            elif series["status"] == "cancelled":
                conclusion.note = f"series {series_id} was cancelled: {series['verdict']['text']}"
            return conclusion
        experiment = project.runnable_experiment(series["experiment_id"])
        spec = experiment.spec
        try:
            now = planning.snapshot(project, planning.plan(project, experiment, series["split"], None,
                                                           series["repeats"], names=series["cases"]))
        except (planning.PlanError, OSError, AttributeError, KeyError):
            now = None
        touched = inputs.changed(series.get("fingerprints", {}))
        facts = stats.SeriesFacts(
            series_id=series_id, split=series["split"], variants=tuple(series["variants"]),
            check_kinds={c.id: c.kind for c in spec.checks}, check_scales=check_scales(project, experiment),
            unvalidated_judges=unvalidated(project, experiment),
            total_attempts=total, family=family, cancelled=_stopped(series) == "cancelled",
            budget_cut=tally.budget_cut > 0,
            # changed now, or touched at any time since the start (even if changed back: the mtime moved), or
            # a process of the series read other inputs than it recorded (its attempts say inputs_changed)
            inputs_changed=now != series["snapshot"] or bool(touched)
            or tally.inputs_changed > 0 or _stopped(series) == "inputs_changed",
            changed_inputs=inputs.named(touched, project.root),
            salt=stats.experiment_salt(project.package, experiment.id))
        table = tally.table(facts.salt, facts.check_kinds)
        conclusion.question = question = question_of(spec)
        from ..stats.verdicts import decide_table  # noqa: PLC0415
        verdict = decide_table(question, table, facts)
        conclusion.verdict, conclusion.facts, conclusion.table = verdict, facts, table
        status = "failed" if tally.infra_errors == tally.done else "done"
        from .publish import record  # noqa: PLC0415  (the finding document builds on this module)
        # the series is marked done in the transaction that records its finding, unless a cancel won
        try:
            held = record(store, project, series, conclusion, tally, status, {
                "verdict": {"state": verdict.state, "reason": verdict.reason, "text": verdict.text}, "family": family})
        except storage.disk.DiskFull as exc:     # shown now; the series stays running, the same command records it
            conclusion.unrecorded = str(exc)
            return conclusion
        if held == "cancelled" and not (facts.cancelled or facts.inputs_changed):   # while it was being decided
            why = _stopped(store.known_series(series_id))                           # final, for its reason
            facts = dataclasses.replace(facts, cancelled=why == "cancelled", inputs_changed=why == "inputs_changed")
            conclusion.verdict, conclusion.facts = decide_table(question, table, facts), facts
        return conclusion
    finally:
        store.close()


def _stopped(series: dict) -> str | None:
    """Why a cancelled series was stopped: cancelled (a person, -x, --maxfail), or inputs_changed (a later run
    found its inputs edited and closed it); None for a series that was not."""
    if series["status"] != "cancelled":
        return None
    return "inputs_changed" if (series.get("verdict") or {}).get("reason") == "inputs_changed" else "cancelled"
