"""Number formatting and the verdict sentences of reference §4.6-4.7, word for word."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import cast

from .model import Cell, Estimate
from .samples import LOWER

DEGENERATE_WORDS = {
    "no_data": "no data",
    "too_few_cases": "too few cases",
    "too_few_attempts": "too few attempts",
    "no_discordance": "the variants agree on every case",
    "uninformative": "every case passes or fails for both variants",
    "numeric": "the interval could not be computed",
}
THRESHOLD_TAILS = {
    "pass": "clears the bound by more than the margin",
    "fail": "stays within the margin of the bound or on its wrong side",
    "unclear": "too wide to decide",
}
PAIR_TAILS = {
    "compare": {
        "pass": "better by more than the {margin} margin",
        "fail": "the effect is within ±{margin} or reversed",
        "unclear": "too wide to decide at the {margin} margin",
    },
    "noninferior": {
        "pass": "not worse by more than the {margin} margin",
        "fail": "worse by more than the {margin} margin",
        "unclear": "too wide to decide at the {margin} margin",
    },
}
GUARDRAIL_WORDS = {"pass": "holds", "fail": "breaks", "unclear": "is unsettled"}
GUARDRAIL_TAILS = {"pass": "within the {margin}", "fail": "beyond the {margin}", "unclear": "too wide to decide at the {margin}"}
RATIO_VERBS = {"cost_of_pass": "costs", "latency_p50_ms": "takes", "latency_p95_ms": "takes"}  # else "is"
DECIMALS = {"rate": 2, "score": 3, "ordinal": 1, "ms": 0, "ratio": 2}
WHOLE_GUARDED = frozenset({"rate", "score", "ordinal", "ratio"})  # a value off a whole number never prints as one
MAX_DECIMALS = 8
WHOLE_TOLERANCE = 1e-9  # a bound this close to a whole number is on it (the betting bisection's grid is 2e-13)


# an interval that cannot decide for want of width, not for too much of it
ZERO_WIDTH_TAIL = "every case measured the same, and a zero-width interval decides nothing"
NO_INTERVAL_TAIL = "no interval, so no decision"
NO_COST_BOUND = "no per-attempt cost bound is known"  # docs/statistics.md: what an unseen dear attempt does
# a cost verdict the interval gave but no per-attempt bound holds (estimates.open_above)
NO_COST_BOUND_TAIL = (f"not decided, as {NO_COST_BOUND}: attempts dearer than any measured could lift the mean "
                      "past the edge")
NO_COST_BOUND_PAIR_TAIL = (f"not decided, as {NO_COST_BOUND}: attempts of {{variant}} dearer than any measured "
                           "could undo it")
MORE_DIGITS = 4  # at most this many extra decimals (or significant digits) to show a bound's side of an edge


def usd(value: float, signed: bool, extra: int = 0) -> str:
    """4 significant digits (more with `extra`), trailing zeros trimmed, never an exponent: $0.000538."""
    sign = "-" if value < 0 else ("+" if signed else "")
    size = abs(value)
    if size == 0:
        return f"{sign}$0"
    decimals = max(0, 3 + extra - math.floor(math.log10(size)))
    digits = f"{size:.{decimals}f}"
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    return f"{sign}${digits}"


def number(value: float | None, unit: str, signed: bool = False, extra: int = 0) -> str:
    """The unit's decimals (more with `extra`); a rate, score, ordinal or ratio that is not a whole number
    never prints as one: 0.99575 is 0.996, not 1.00, and 0.004 is 0.004, not 0.00."""
    if value is None:
        return "n/a"
    if unit == "usd":
        return usd(value, signed, extra)
    decimals = DECIMALS.get(unit, 3) + extra
    text = f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"
    if unit in WHOLE_GUARDED and not math.isclose(value, round(value), rel_tol=0, abs_tol=WHOLE_TOLERANCE):
        while _shown(text) == round(_shown(text)) and decimals < MAX_DECIMALS:
            decimals += 1
            text = f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"
    return text


def _shown(text: str) -> float:
    return float(text.replace("$", "").replace("+", ""))


def bound(value: float, unit: str, signed: bool = False, edge: float | None = None) -> str:
    """A bound with the unit's digits, and more when fewer would put it on the edge or across it:
    0.618 next to an edge of 0.62 prints 0.618, never 0.62. A bound exactly on the edge stays as is."""
    text = number(value, unit, signed)
    if edge is None or value == edge or not math.isfinite(edge):
        return text
    for extra in range(1, MORE_DIGITS + 1):
        if (_shown(text) - edge) * (value - edge) > 0:
            break
        text = number(value, unit, signed, extra)
    return text


def declared(value: float, unit: str | None = None) -> str:
    """A number from the experiment file: as written (`:g`), money as money, never an exponent."""
    if unit == "usd":
        return usd(value, False, MORE_DIGITS)
    text = f"{value:g}"
    if "e" in text:
        text = format(Decimal(repr(float(value))), "f")
    return text


def interval_text(estimate: Estimate, unit: str, signed: bool = False, edge: float | None = None) -> str:
    if estimate.low is None and estimate.high is None:
        words = DEGENERATE_WORDS.get(estimate.degenerate or "numeric", DEGENERATE_WORDS["numeric"])
        return f"no 95% CI: {words}"
    low = "unbounded" if estimate.low is None else bound(estimate.low, unit, signed, edge)
    high = "unbounded" if estimate.high is None else bound(estimate.high, unit, signed, edge)
    return f"95% CI {low} to {high}"


def zero_width(estimate: Estimate) -> bool:
    """Every case gave the same value (the bounds agree up to rounding noise)."""
    return (estimate.reliability == "degenerate" and estimate.low is not None and estimate.high is not None
            and math.isclose(estimate.low, estimate.high, rel_tol=1e-9, abs_tol=1e-15))


def _undecided_tail(cell: Cell, tail: str) -> str:
    """The unclear tail, unless width was not the reason: no interval, or one of zero width."""
    if cell.estimate.low is None and cell.estimate.high is None:
        return NO_INTERVAL_TAIL
    if zero_width(cell.estimate):
        return ZERO_WIDTH_TAIL
    return tail


def no_cost_bound(cell: Cell) -> bool:
    """A cost cell left unclear although its interval clears its edge on the side that needs an upper bound
    of the (candidate's) cost: no per-attempt bound is known, so that side was not taken (edges.no_upper_bound,
    edges.without_candidate_high). Under the model family it would have decided."""
    est = cell.estimate
    cost = est.unit == "usd" or cell.metric == "cost_of_pass"   # a relative cost_of_pass is on its log ratio
    if cell.verdict != "unclear" or not cost or est.cost_bound is not None or cell.edge is None or zero_width(est):
        return False
    if cell.baseline is not None and cell.direction == LOWER:   # good-direction scale: + = the candidate cheaper
        return est.low is not None and est.low > cell.edge
    return est.high is not None and est.high < cell.edge


def cost_caveat(cell: Cell) -> str:
    """" (no per-attempt cost bound is known)" for a cost cell (in dollars) decided without one, else ""."""
    est = cell.estimate
    unbounded = est.unit == "usd" and est.cost_bound is None and not no_cost_bound(cell)
    return f" ({NO_COST_BOUND})" if unbounded and est.low is not None and not zero_width(est) else ""


def counted_against_tail(cell: Cell, unit: str, signed: bool = False) -> str:
    """The tail of a cell the unmeasured attempts undid (its counted_against is set)."""
    against = cast(Estimate, cell.counted_against)
    return (f"decided only without the unmeasured attempts (with them: {number(against.value, unit, signed)}, "
            f"{interval_text(against, unit, signed, cell.edge)})")


def threshold_phrase(cell: Cell, unit: str) -> str:
    """A threshold cell (its threshold is always set) in words."""
    tail = THRESHOLD_TAILS[cell.verdict]
    if cell.counted_against is not None:
        tail = counted_against_tail(cell, unit)
    elif no_cost_bound(cell):
        tail = NO_COST_BOUND_TAIL
    elif cell.verdict == "unclear":
        tail = _undecided_tail(cell, tail)
    return (
        f"{cell.variant}: {cell.metric} is {number(cell.estimate.value, unit)} "
        f"({interval_text(cell.estimate, unit, edge=cell.edge)}) against {cell.bound} {declared(cast(float, cell.threshold), unit)} "
        f"with margin {declared(cell.margin, unit)}: {tail}{cost_caveat(cell)}"
    )


def threshold_measurement(cells: Sequence[Cell], unit: str) -> str:
    return "; ".join(threshold_phrase(cell, unit) for cell in cells)


def pair_measurement(kind: str, primary: Cell, unit: str, guardrails: Sequence[Cell]) -> str:
    tail = PAIR_TAILS[kind][primary.verdict].format(margin=declared(primary.margin, unit))
    if primary.counted_against is not None:
        tail = counted_against_tail(primary, unit, True)
    elif no_cost_bound(primary):
        tail = NO_COST_BOUND_PAIR_TAIL.format(variant=primary.variant)
    elif primary.verdict == "unclear":
        tail = _undecided_tail(primary, tail)
    # differences are oriented "positive = candidate better": where lower is better, say so
    way = f", lower is better (+ = {primary.variant} lower)" if primary.direction == LOWER else ""
    head = (
        f"{primary.variant} vs {primary.baseline} on {primary.metric}{way}: "
        f"{number(primary.estimate.value, unit, True)} "
        f"({interval_text(primary.estimate, unit, True, primary.edge)}): {tail}{cost_caveat(primary)}"
    )
    return head + "".join(f"; {guardrail_phrase(g)}{cost_caveat(g)}" for g in guardrails)


def guardrail_phrase(cell: Cell) -> str:
    """A guardrail with its interval and the edge it was held to: "guardrail cost_of_pass holds: small costs
    0.11x large (95% CI 0.09x to 0.14x), within the relative margin 0.5". Differences are on the
    good-direction scale (+ = the candidate better); a relative margin on a rate or mean is the linear
    contrast the cell decides (cand - 0.9x base, or 1.1x base - cand), on a ratio or quantile the ratio."""
    est, edge, unit = cell.estimate, cast(float, cell.edge), cell.estimate.unit   # a guardrail has its edge
    cand, base, lower = cell.variant, cell.baseline, cell.direction == LOWER
    margin = f"relative margin {declared(cell.margin)}" if cell.relative else f"margin {declared(cell.margin, unit)}"
    tail = GUARDRAIL_TAILS[cell.verdict].format(margin=margin)
    if no_cost_bound(cell):
        tail = NO_COST_BOUND_PAIR_TAIL.format(variant=cand)
    elif cell.verdict == "unclear":
        tail = _undecided_tail(cell, tail)
    head = f"guardrail {cell.metric} {GUARDRAIL_WORDS[cell.verdict]}"
    if unit == "log_ratio":  # the good-direction log(R_c / R_b), negated where lower is better: shown as R_c / R_b
        way = -1.0 if lower else 1.0
        ratio = "n/a" if est.value is None else number(math.exp(way * est.value), "ratio") + "x"
        ci = interval_text(est, unit)
        if est.low is not None and est.high is not None:
            ends = sorted(math.exp(way * b) for b in (est.low, est.high))
            ci = "95% CI {}x to {}x".format(*(bound(e, "ratio", edge=math.exp(way * edge)) for e in ends))
        return f"{head}: {cand} {RATIO_VERBS.get(cell.metric, 'is')} {ratio} {base} ({ci}), {tail}"
    measure = f"{number(est.value, unit, True)} ({interval_text(est, unit, True, edge)})"
    if cell.relative:
        factor = declared(1 + cell.margin if lower else 1 - cell.margin)
        what = f"{factor}x {base} - {cand}" if lower else f"{cand} - {factor}x {base}"
        return f"{head}: {what} is {measure}, {tail}"
    way_text = f", lower is better (+ = {cand} lower)" if lower else ""
    return f"{head}{way_text}: {measure}, {tail}"


def stopped_early_clause(cases: int, planned: int) -> str:
    return (f"; stopped early after {cases} of {planned} cases, decided on the betting bound (a confidence "
            "sequence over the planned cases)")


def sentence(measurement: str) -> str:
    return f"{measurement}."


def dev_signal(measurement: str) -> str:
    return f"Signal on dev, not a finding: {measurement}."


NO_VALIDATED_BY = ("has no validated_by (no experiment measured its errors on planted defects, so they go "
                   "straight into the metric)")


def unvalidated_signal(check: str, measurement: str, why: str | None = None) -> str:
    """`why` completes "judge <check> ...": the condition validated_by did not meet (findings/judges.py)."""
    return f"Signal only, judge {check} {why or NO_VALIDATED_BY}: {measurement}."


def cancelled_text(done: int, total: int) -> str:
    return f"No finding: cancelled after {done} of {total} attempts."


def budget_cut_text(done: int, total: int) -> str:
    return f"No finding: the spend cap stopped the series after {done} of {total} attempts."


def inputs_changed_text(files: str = "") -> str:
    """`files`: the changed input files as a message names them (experiments/inputs.py named), or ""."""
    return (f"No finding: inputs changed during the series{f': {files}' if files else ''} "
            "(the working tree no longer matches the snapshot taken at the start).")
NO_DATA_TEXT = "No finding: the primary metric has no data."
LOOK_TEXT = "A look gives no verdict."


def infra_errors_text(errors: int, settled: int) -> str:
    return f"No finding: {errors} of {settled} attempts hit infrastructure errors."


UNMEASURED_WORDS = (("infra_error", "infrastructure error", "infrastructure errors"),
                    ("budget_cut", "cut by the spend cap", "cut by the spend cap"),
                    ("cancelled", "cancelled", "cancelled"), ("unrun", "never ran", "never ran"))


def unmeasured_phrase(counts: Mapping[str, int], planned: int, cases: int = 0, of_cases: int = 0) -> str:
    """`counts`: unmeasured attempts by outcome (and "unrun"); `cases` of `of_cases` had no measured attempt."""
    total = sum(counts.values())
    parts = ", ".join(f"{counts[key]} {one if counts[key] == 1 else many}"
                      for key, one, many in UNMEASURED_WORDS if counts.get(key))
    if cases:
        parts += f"; {none_measured(cases, of_cases)}"
    return f"{total} of {planned} attempts {'was' if total == 1 else 'were'} not measured ({parts})"


def none_measured(cases: int, of_cases: int) -> str:
    return f"{cases} of {of_cases} cases had none measured"


def unmeasured_text(counts: Mapping[str, int], planned: int, cases: int = 0, of_cases: int = 0) -> str:
    """Too many unmeasured attempts: infrastructure errors alone keep their own sentence."""
    if set(counts) == {"infra_error"}:
        text = infra_errors_text(counts["infra_error"], planned)
        return f"{text[:-1]} ({none_measured(cases, of_cases)})." if cases else text
    return f"No finding: {unmeasured_phrase(counts, planned, cases, of_cases)}."


def counted_against_clause(counts: Mapping[str, int], planned: int, cases: int, of_cases: int) -> str:
    """What a decided verdict's measurement adds when some attempts were not measured."""
    return f"; {unmeasured_phrase(counts, planned, cases, of_cases)} and count against the claim"
