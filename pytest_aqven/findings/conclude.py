"""After the last attempt: the verdict of a series from its attempts (folded in a SeriesTally as they came).
Deciding reads the project database and writes nothing: publish.settle records the series' end and its finding."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .. import stats
from ..experiments import inputs, plan as planning
from ..project.model import Project
from ..series.db import Store, planned_attempts
from ..series.ledger import PROVIDER_UNUSABLE, pause_text, spend
from ..series.stopping import decided_cases
from ..series.tally import SeriesTally, TallyTable
from ..series.to_stats import facts_of, question_of
from .judges import unvalidated


@dataclass
class Conclusion:
    experiment: str
    series_id: str
    split: str
    done: int
    total: int
    verdict: stats.ExperimentVerdict | None = None      # None while the series is incomplete
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

    def decided(self) -> tuple[stats.Threshold | stats.Pair | stats.Look, stats.ExperimentVerdict, stats.SeriesFacts,
                               TallyTable]:
        """The question, verdict, facts and table of a decided series (what a finding is built from)."""
        if self.question is None or self.verdict is None or self.facts is None or self.table is None:
            raise ValueError(f"series {self.series_id} is not decided")
        return self.question, self.verdict, self.facts, self.table


def conclude(project: Project, store: Store, series_id: str, tally: SeriesTally, *,
             family: str = "robust") -> Conclusion:
    """Decide a series whose attempts all finished; leave it running (no verdict) when some did not.
    `tally`: its attempts. `project` is loaded after the attempts ran: the snapshot taken now is compared with
    the one at the start. Reads `store`, writes nothing (publish.settle records what was decided)."""
    series = store.known_series(series_id)
    total = planned_attempts(series)
    salt = stats.experiment_salt(project.package, series["experiment_id"])
    prefix = decided_cases(series, salt)    # stopped early: decided on these cases alone
    chosen = None if prefix is None else set(prefix)
    if prefix is not None:
        total = len(series["variants"]) * len(prefix) * series["repeats"]
    done = tally.done if chosen is None else tally.done_in(chosen)
    conclusion = Conclusion(series["experiment_id"], series_id, series["split"], done, total)
    conclusion.spend_usd = tally.spend
    conclusion.unpriced_calls = tally.unpriced_calls
    if done < total:
        conclusion.note = (f"{tally.done} of {total} attempts ran in this session; the series stays open "
                           f"until a run selects every attempt of it and its verdict (`-k {tally.experiment}`, "
                           "or its experiment.yaml), which reuses those recorded")
        if series["status"] == "awaiting_approval":
            with store.transaction() as db:       # the spend and the running claims at one instant; no write
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
    facts = facts_of(
        project, experiment, series_id, series, family, unvalidated_judges=unvalidated(project, experiment),
        total_attempts=total, cancelled=_stopped(series) == "cancelled", budget_cut=tally.budget_cut > 0,
        # changed now, or touched at any time since the start (even if changed back: the mtime moved), or
        # a process of the series read other inputs than it recorded (its attempts say inputs_changed)
        inputs_changed=now != series["snapshot"] or bool(touched)
        or tally.inputs_changed > 0 or _stopped(series) == "inputs_changed",
        changed_inputs=inputs.named(touched, project.root), cost_bound=tally.cost_bound(),
        planned_cases=0 if prefix is None else len(series["cases"]))
    table = tally.table(facts.salt, facts.check_kinds, chosen)
    from ..stats.verdicts import decide_table  # noqa: PLC0415  (numpy: not when a worker collects)
    conclusion.question = question = question_of(spec)
    conclusion.verdict, conclusion.facts, conclusion.table = decide_table(question, table, facts), facts, table
    return conclusion


def stopped_meanwhile(conclusion: Conclusion, series: dict) -> None:
    """A series stopped while it was being decided (a cancel landed first, and cancel is final): its verdict
    again, saying why it stopped."""
    question, _, facts, table = conclusion.decided()
    if facts.cancelled or facts.inputs_changed:     # decided as stopped already
        return
    from ..stats.verdicts import decide_table  # noqa: PLC0415
    why = _stopped(series)
    facts = dataclasses.replace(facts, cancelled=why == "cancelled", inputs_changed=why == "inputs_changed")
    conclusion.verdict, conclusion.facts = decide_table(question, table, facts), facts


def _stopped(series: dict) -> str | None:
    """Why a cancelled series was stopped: cancelled (a person, -x, --maxfail), or inputs_changed (a later run
    found its inputs edited and closed it); None for a series that was not."""
    if series["status"] != "cancelled":
        return None
    return "inputs_changed" if (series.get("verdict") or {}).get("reason") == "inputs_changed" else "cancelled"
