"""A decided (or still open) series as plain data: what the terminal table, junit, html, --aqven-json and
the aqven_verdict hook all show. Only aggregates: no case of a held-out series is named here."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
INFRA = ("infra_error", "budget_cut", "cancelled")

# What to do next per verdict (reference/aqven-experiments.md, reading order), by state then reason.
NEXT = {
    ("confirmed", None): "act on it: change the flow as the experiment proposed",
    ("refuted", None): "drop the hypothesis or state a new one (a refuted claim is no proof of the opposite)",
    ("inconclusive", "below_mde"): "run a new held-out series of the recommended size on fresh cases "
                                   "(never rerun the same cases)",
    ("inconclusive", "uninformative"): "add boundary cases: every case gives the same result",
    ("inconclusive", "no_discordance"): "add boundary cases where the variants can differ",
    ("inconclusive", None): "run a new held-out series of the recommended size on fresh cases",
    ("signal", "dev_split"): "keep exploring on the working cases, then run --aqven-holdout for a verdict",
    ("signal", "judge_not_validated"): "validate the judge (validated_by) before trusting its verdict",
    ("invalid", "cancelled"): "rerun the same command to finish the series",
    ("invalid", "budget_cut"): "rerun with a spend cap that fits the launch plan",
    ("invalid", "inputs_changed"): "rerun without editing the project while the series runs",
    ("invalid", "infra_errors"): "fix the provider key, rate limit or code the attempt errors name (-rs), then rerun",
    ("invalid", "no_data"): "read the attempts' errors (-rs): none gave a measurement",
}


def state_word(conclusion) -> str:
    """The verdict word people read: one of AQVEN's five, 'none' for a look, 'open' without a verdict."""
    if conclusion.verdict is None:
        return "open"
    return conclusion.state or "none"


def next_step(state: str, reason: str | None, plan: dict | None = None, cells: list[dict] = ()) -> str | None:
    """The advice for the verdict's reason, then how many cases would settle it: from the observed interval
    of the primary cell (cases × (half-width / margin)²), or the closed-form launch plan when that asks for
    more cases than ran (the closed form alone is optimistic: it never says 'enough' here)."""
    if state in ("open", "none", "confirmed"):
        return None
    text = NEXT.get((state, reason)) or NEXT.get((state, None))
    if state not in ("inconclusive", "signal", "refuted"):
        return text
    more = []
    primary = next((c for c in cells if c["role"] == "primary"), None)
    e = primary["estimate"] if primary else None
    if state != "refuted" and e and e["low"] is not None and e["high"] is not None and (primary["margin"] or 0) > 0:
        half = (e["high"] - e["low"]) / 2
        if half > primary["margin"] and e["cases"]:
            needed = math.ceil(e["cases"] * (half / primary["margin"]) ** 2)
            more.append(f"the observed ±{half:.2g} at {e['cases']} cases suggests about {needed} cases for "
                        f"±{primary['margin']:g}")
    if plan and plan["reason"] in ("wide", "short_of_cases"):
        more.append(f"launch plan with the rates observed so far: {plan['text']}")
    return "; ".join([text, *more]) if text else "; ".join(more) or None


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else round(x, 6)


def cell_entry(cell) -> dict[str, Any]:
    e = cell.estimate
    return {"metric": cell.metric, "role": cell.role, "variant": cell.variant, "baseline": cell.baseline,
            "direction": cell.direction, "bound": cell.bound, "threshold": _num(cell.threshold),
            "margin": _num(cell.margin), "relative": cell.relative, "edge": _num(cell.edge),
            "verdict": cell.verdict, "decided_by": cell.decided_by,
            "estimate": {"value": _num(e.value), "low": _num(e.low), "high": _num(e.high), "unit": e.unit,
                         "method": e.method, "family": e.family, "cases": e.cases, "attempts": e.attempts,
                         "degenerate": e.degenerate}}


def stability(tally, repeats: int) -> dict[str, dict]:
    """Per variant over counted attempts: cases that always / never / sometimes passed, and pass^k
    (k = repeats; the mean over cases of C(passed, k) / C(attempts, k)). Empty when repeats < 2.
    `tally`: the series' SeriesTally."""
    if repeats < 2:
        return {}
    per = tally.pass_counts()
    out = {}
    for variant in sorted(per):
        runs = [(k, n) for k, n in per[variant] if n >= 2]
        ks = [(k, n) for k, n in per[variant] if n >= repeats]
        pass_k = (sum(math.comb(k, repeats) / math.comb(n, repeats) for k, n in ks) / len(ks)) if ks else None
        out[variant] = {"always": sum(k == n for k, n in runs), "never": sum(k == 0 for k, n in runs),
                        "flaky": sum(0 < k < n for k, n in runs), "pass_hat_k": _num(pass_k), "k": repeats}
    return out


def series_entry(conclusion, tally, layout: dict, cap_usd: float | None,
                 plan: dict | None = None, project: str = ".") -> dict[str, Any]:
    """`tally`: the series' attempts (series/tally.py); `layout`: its question kind, variants, cases and
    repeats (from its database row); `project`: its root as the reports name it (relative to pytest's
    rootdir). Paths are relative, so a report reads the same on every machine."""
    word = state_word(conclusion)
    verdict = conclusion.verdict
    spend = tally.cost_sum + tally.check_cost_sum
    unpriced = tally.unpriced_calls
    reason = verdict.reason if verdict else None
    return {
        "experiment": conclusion.experiment,
        "series_id": conclusion.series_id,
        "split": conclusion.split,
        "question": layout.get("question"),
        "variants": list(layout.get("variants", [])),
        "cases": layout.get("cases"),
        "repeats": layout.get("repeats"),
        "attempts": {"done": conclusion.done, "total": conclusion.total, "reused": tally.reused,
                     "passed": tally.passed, "failed_checks": tally.failed_checks, "infra_errors": tally.infra},
        "verdict": None if verdict is None else {"state": word, "reason": reason, "sentence": verdict.text},
        "note": conclusion.note,
        "cells": [cell_entry(c) for c in verdict.cells] if verdict else [],
        "stability": stability(tally, layout.get("repeats") or 1),
        "spend": {"usd": _num(spend), "cap_usd": _num(cap_usd), "unpriced_calls": unpriced,
                  "lower_bound": unpriced > 0},
        "launch_plan": plan,
        "next": next_step(word, reason, plan, [cell_entry(c) for c in verdict.cells] if verdict else []),
        "project": project,
        "finding_path": None if conclusion.finding is None
        else Path(conclusion.finding).relative_to(tally.root).as_posix(),
    }


def plan_entry(p) -> dict[str, Any]:
    """A stats.LaunchPlan as data."""
    return {"cases": p.cases, "repeats": p.repeats, "variants": p.variants, "attempts": p.attempts,
            "available": p.available, "recommended_cases": p.recommended_cases, "reason": p.reason,
            "half_width": _num(p.half_width), "below_recommended": p.below_recommended, "text": p.text}
