"""Number formatting and the verdict sentences of reference §4.6-4.7, word for word."""

from __future__ import annotations

import math
from collections.abc import Sequence

from .model import Cell, Estimate

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
DECIMALS = {"rate": 2, "score": 3, "ordinal": 1, "ms": 0}


def usd(value: float, signed: bool) -> str:
    sign = "-" if value < 0 else ("+" if signed else "")
    size = abs(value)
    if size == 0:
        return f"{sign}$0"
    decimals = max(0, 3 - math.floor(math.log10(size)))  # 4 significant digits
    digits = f"{size:.{decimals}f}"
    if "." in digits:
        digits = digits.rstrip("0").rstrip(".")
    return f"{sign}${digits}"


def number(value: float | None, unit: str, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    if unit == "usd":
        return usd(value, signed)
    decimals = DECIMALS.get(unit, 3)
    return f"{value:+.{decimals}f}" if signed else f"{value:.{decimals}f}"


def declared(value: float) -> str:
    return f"{value:g}"


def interval_text(estimate: Estimate, unit: str, signed: bool = False) -> str:
    if estimate.low is None and estimate.high is None:
        words = DEGENERATE_WORDS.get(estimate.degenerate or "numeric", DEGENERATE_WORDS["numeric"])
        return f"no 95% CI: {words}"
    low = "unbounded" if estimate.low is None else number(estimate.low, unit, signed)
    high = "unbounded" if estimate.high is None else number(estimate.high, unit, signed)
    return f"95% CI {low} to {high}"


def threshold_phrase(cell: Cell, unit: str) -> str:
    return (
        f"{cell.variant}: {cell.metric} is {number(cell.estimate.value, unit)} "
        f"({interval_text(cell.estimate, unit)}) against {cell.bound} {declared(cell.threshold)} "
        f"with margin {declared(cell.margin)}: {THRESHOLD_TAILS[cell.verdict]}"
    )


def threshold_measurement(cells: Sequence[Cell], unit: str) -> str:
    return "; ".join(threshold_phrase(cell, unit) for cell in cells)


def pair_measurement(kind: str, primary: Cell, unit: str, guardrails: Sequence[Cell]) -> str:
    tail = PAIR_TAILS[kind][primary.verdict].format(margin=declared(primary.margin))
    head = (
        f"{primary.variant} vs {primary.baseline} on {primary.metric}: "
        f"{number(primary.estimate.value, unit, True)} ({interval_text(primary.estimate, unit, True)}): {tail}"
    )
    return head + "".join(f"; guardrail {g.metric} {GUARDRAIL_WORDS[g.verdict]}" for g in guardrails)


def sentence(measurement: str) -> str:
    return f"{measurement}."


def dev_signal(measurement: str) -> str:
    return f"Signal on dev, not a finding: {measurement}."


def unvalidated_signal(check: str, measurement: str) -> str:
    return (f"Signal only, judge {check} has no validated_by (no experiment measured its errors on planted "
            f"defects, so they go straight into the metric): {measurement}.")


def cancelled_text(done: int, total: int) -> str:
    return f"No finding: cancelled after {done} of {total} attempts."


def budget_cut_text(done: int, total: int) -> str:
    return f"No finding: the spend cap stopped the series after {done} of {total} attempts."


INPUTS_CHANGED_TEXT = (
    "No finding: inputs changed during the series "
    "(the working tree no longer matches the snapshot taken at the start)."
)
NO_DATA_TEXT = "No finding: the primary metric has no data."
LOOK_TEXT = "A look gives no verdict."


def infra_errors_text(errors: int, settled: int) -> str:
    return f"No finding: {errors} of {settled} attempts hit infrastructure errors."
