"""Cells, the rule order of reference §4.6 and the verdict sentence: `decide`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from . import betting, early, missing, wording
from .edges import threshold_cell
from .estimates import betting_input, single
from .model import Attempt, Cell, Estimate, ExperimentVerdict, Look, Pair, SeriesFacts, Threshold
from .pairs import pair_cells
from .samples import SERIES_METRICS, AttemptTable, SampleTable, Unmeasured, metric_info

INFRA_SHARE_LIMIT = 0.05


def all_metrics(table: SampleTable, facts: SeriesFacts, extra: Sequence[str] = ()) -> dict[str, dict[str, Estimate]]:
    """Every series metric and every check metric, per variant, single-variant estimates."""
    names = list(SERIES_METRICS) + [c for c in facts.check_kinds if c not in SERIES_METRICS]
    names += [m for m in extra if m not in names]
    infos = [metric_info(name, facts.check_kinds, facts.check_scales) for name in names]
    samples = {(v, info.name): table.sample(v, info) for v in facts.variants for info in infos}
    inputs = {key: betting_input(s, facts.salt, facts.family) for key, s in samples.items()}
    bets = betting.intervals({key: x for key, x in inputs.items() if x is not None})
    return {
        v: {info.name: single(samples[v, info.name], facts.salt, facts.family, bets.get((v, info.name)),
                              facts.cost_bound)
            for info in infos}
        for v in facts.variants
    }


def _direction(metric: str, override: str | None, facts: SeriesFacts) -> str:
    return override or metric_info(metric, facts.check_kinds, facts.check_scales).direction


def _below_mde(cell: Cell) -> bool:
    est = cell.estimate
    if est.low is None or est.high is None:
        return True
    if cell.margin > 0:
        return (est.high - est.low) / 2 > cell.margin
    return est.low <= cast(float, cell.edge) <= est.high    # every primary cell has its edge


def _inconclusive_reason(primaries: Sequence[Cell]) -> str | None:
    if any(c.counted_against is not None for c in primaries):
        return "unmeasured"     # decided on the measured attempts, undone by the unmeasured ones
    # too few cases (or attempts) for an interval is said so, not "below_mde": no width was measured
    for reason in ("uninformative", "no_discordance", "too_few_cases", "too_few_attempts"):
        if any(c.estimate.degenerate == reason for c in primaries):
            return reason
    if any(wording.no_cost_bound(c) for c in primaries):
        return "no_cost_bound"  # the interval cleared its edge from below, but no bound holds the mean there
    if any(c.verdict == "unclear" and wording.zero_width(c.estimate) for c in primaries):
        return "uninformative"  # a constant: no width to be too wide
    if any(c.verdict == "unclear" and _below_mde(c) for c in primaries):
        return "below_mde"
    return None


def decide(question: Threshold | Pair | Look, attempts: Sequence[Attempt], facts: SeriesFacts) -> ExperimentVerdict:
    return decide_table(question, AttemptTable(attempts, facts.check_kinds), facts)


def decide_table(question: Threshold | Pair | Look, table: SampleTable, facts: SeriesFacts) -> ExperimentVerdict:
    """The verdict from a table of per-case samples: an AttemptTable, or a finding's sufficient data
    (`evidence.EvidenceTable`) when `aqven check` recomputes it."""
    extra: list[str] = []
    if isinstance(question, Threshold):
        extra = [question.metric]
    elif isinstance(question, Pair):
        extra = [question.primary] + [g.metric for g in question.guardrails]
    metrics = all_metrics(table, facts, extra)

    def invalid(reason: str, text: str) -> ExperimentVerdict:
        return ExperimentVerdict("invalid", reason, text, (), metrics)

    if isinstance(question, Look):
        return ExperimentVerdict(None, None, wording.LOOK_TEXT, (), metrics)
    done = table.tallies()[0]
    total = facts.total_attempts
    unmeasured = table.unmeasured()
    # attempts selected but not measured count together: cut by the cap, infrastructure errors, cancelled, unrun
    planned = max(total, done)
    counts = {**unmeasured.by_outcome, **({"unrun": planned - done} if planned > done else {})}
    too_many = planned > 0 and sum(counts.values()) / planned > INFRA_SHARE_LIMIT
    cases, of_cases = _unmeasured_cases(table, unmeasured, facts)
    if facts.cancelled:
        return invalid("cancelled", wording.cancelled_text(done, total))
    if too_many and (facts.budget_cut or "budget_cut" in counts):
        if "budget_cut" not in counts:    # the cap stopped the series: no attempt of it was cut
            return invalid("budget_cut", wording.budget_cut_text(done, total))
        return invalid("budget_cut", wording.unmeasured_text(counts, planned, cases, of_cases))
    if facts.inputs_changed:
        return invalid("inputs_changed", wording.inputs_changed_text(facts.changed_inputs))
    if too_many:
        return invalid("infra_errors", wording.unmeasured_text(counts, planned, cases, of_cases))

    # a series stopped early is decided by the betting sequence alone, as it was when it stopped
    stopped = early.decided(question, table, facts, facts.planned_cases) if facts.planned_cases else None
    if isinstance(question, Threshold):
        metric = question.metric
        unit = metric_info(metric, facts.check_kinds, facts.check_scales).unit
        tested = [question.variant] if question.variant else list(facts.variants)
        direction = _direction(metric, question.direction, facts)
        primaries = [threshold_cell(question, v, metrics[v][metric], direction, facts.family)
                     for v in tested if v in metrics]
        if stopped:
            primaries = stopped[0]
        elif missing.affected(question, facts, unmeasured):
            info = metric_info(metric, facts.check_kinds)
            worst, best = (missing.ImputedTable(table, missing.sides(question, facts, side), facts.variants)
                           for side in (True, False))

            def imputed_cell(imputed: missing.ImputedTable, variant: str) -> Cell:
                return threshold_cell(question, variant, single(imputed.sample(variant, info), facts.salt,
                                                                facts.family, cost_bound=facts.cost_bound),
                                      direction, facts.family)
            primaries = [missing.held(cell, imputed_cell(worst, cell.variant), imputed_cell(best, cell.variant))
                         for cell in primaries]
        guards: list[Cell] = []
        judged = [metric]
        measurement = wording.threshold_measurement(primaries, unit) if primaries else ""
    else:
        primaries, guards = stopped or pair_cells(question, table, facts)
        if not stopped and missing.affected(question, facts, unmeasured):
            (worst_cells, worst_guards), (best_cells, best_guards) = (pair_cells(question, missing.ImputedTable(
                table, missing.sides(question, facts, side), facts.variants), facts) for side in (True, False))
            primaries = [missing.held(*cells) for cells in zip(primaries, worst_cells, best_cells)]
            guards = [missing.held(*cells) for cells in zip(guards, worst_guards, best_guards)]
        unit = metric_info(question.primary, facts.check_kinds, facts.check_scales).unit
        judged = [question.primary] + [g.metric for g in question.guardrails]
        measurement = wording.pair_measurement(question.kind, primaries[0], unit, guards) if primaries else ""
    cells = tuple(primaries) + tuple(guards)
    if counts and measurement:
        measurement += wording.counted_against_clause(counts, planned, cases, of_cases)
    if stopped and measurement:
        measurement += wording.stopped_early_clause(primaries[0].estimate.cases, facts.planned_cases)

    if not primaries or any(c.estimate.degenerate == "no_data" for c in primaries):
        return invalid("no_data", wording.NO_DATA_TEXT)
    if facts.split == "dev":
        return ExperimentVerdict("signal", "dev_split", wording.dev_signal(measurement), cells, metrics)
    for check in judged:
        if check in facts.unvalidated_judges:
            why = facts.unvalidated_judges.get(check) if isinstance(facts.unvalidated_judges, Mapping) else None
            return ExperimentVerdict("signal", "judge_not_validated",
                                     wording.unvalidated_signal(check, measurement, why), cells, metrics)
    verdicts = [c.verdict for c in cells]
    if "fail" in verdicts:
        state, reason = "refuted", None
    elif all(v == "pass" for v in verdicts):
        state, reason = "confirmed", None
    else:
        state, reason = "inconclusive", _inconclusive_reason(primaries)
        if reason is None and any(wording.no_cost_bound(g) for g in guards):
            reason = "no_cost_bound"  # the primary decided, a cost guardrail held open for want of a bound
    return ExperimentVerdict(state, reason, wording.sentence(measurement), cells, metrics)


def _unmeasured_cases(table: SampleTable, unmeasured: Unmeasured, facts: SeriesFacts) -> tuple[int, int]:
    """(cases no attempt of any variant measured, every case): a case with no measured attempt is a case
    that was not measured."""
    if not unmeasured.per_case:
        return 0, 0
    info = metric_info("success_rate", facts.check_kinds)
    measured = {case for v in facts.variants for case in table.sample(v, info).cases}
    missed = {case for v in facts.variants for case in unmeasured.per_case.get(v, {})}
    return len(missed - measured), len(measured | missed)
