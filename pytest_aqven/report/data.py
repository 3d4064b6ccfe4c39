"""A decided (or still open) series as plain data: what the terminal table, junit, html, --aqven-json and
the aqven_verdict hook all show. Only aggregates: no case of a held-out series is named here."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import codes

if TYPE_CHECKING:
    from ..findings.conclude import Conclusion
    from ..series.tally import SeriesTally
    from ..stats.model import LaunchPlan

SCHEMA_VERSION = 1

INFRA = codes.UNCOUNTED

# What to do next per verdict (reference/aqven-experiments.md, reading order), by state then reason.
NEXT = {
    ("confirmed", None): "act on it: change the flow as the experiment proposed",
    ("refuted", None): "drop the hypothesis or state a new one (a refuted claim is no proof of the opposite)",
    ("inconclusive", "below_mde"): "run a new held-out series of the recommended size on fresh cases "
                                   "(never rerun the same cases)",
    ("inconclusive", "uninformative"): "add boundary cases: every case gives the same result",
    ("inconclusive", "no_discordance"): "add boundary cases where the variants can differ",
    ("inconclusive", "too_few_cases"): "run more cases: too few had attempts for an interval (a comparison needs at "
                                       "least 2 cases both variants ran on)",
    ("inconclusive", "too_few_attempts"): "run more cases or repeats: a p95 needs at least 20 attempts per variant",
    ("inconclusive", "no_cost_bound"): "give every agent of the flow max_tokens and a priced model, so the most one "
                                       "attempt can cost is known, then run a new held-out series on fresh cases",
    ("inconclusive", "unmeasured"): "measure every attempt (-rs names the errors and the inputs too large for the "
                                    "spend cap), then run a new held-out series on fresh cases",
    ("inconclusive", None): "run a new held-out series of the recommended size on fresh cases",
    ("signal", "dev_split"): "keep exploring on the working cases, then run --aqven-holdout for a verdict",
    ("signal", "judge_not_validated"): "validate the judge (validated_by) before trusting its verdict",
    ("invalid", "cancelled"): "rerun the same command to finish the series",
    ("invalid", "budget_cut"): "rerun with a spend cap that fits the launch plan",
    ("invalid", "inputs_changed"): "rerun without editing the project while the series runs",
    ("invalid", "infra_errors"): "fix the provider key, rate limit or code the attempt errors name (-rs), then rerun",
    ("invalid", "no_data"): "read the attempts' errors (-rs): none gave a measurement",
}


def state_word(conclusion: Conclusion) -> str:
    """The verdict word people read: one of AQVEN's five, 'none' for a look, 'open' without a verdict (but
    'invalid' for a series stopped at a permanent provider error)."""
    if conclusion.verdict is None:
        return "invalid" if conclusion.halted else "open"
    return conclusion.state or "none"


def next_step(state: str, reason: str | None, plan: dict | None = None) -> str | None:
    """The advice for the verdict's reason, then how many cases would settle it, each figure labelled: the
    launch plan's pre-registered one (the truth one margin past the edge) when it asks for more cases than
    ran, and the one at the rates observed so far (this series)."""
    if state in ("open", "none", "confirmed"):
        return None
    text = NEXT.get((state, reason)) or NEXT.get((state, None))
    if state not in ("inconclusive", "signal", "refuted"):
        return text
    more = []
    if plan and plan["reason"] in ("wide", "short_of_cases"):
        how = " (closed form, optimistic for these intervals)" if plan.get("search_pending") else ""
        more.append(f"launch plan{how}: {plan['text']}")
    if plan and plan.get("observed"):
        more.append(plan["observed"]["text"])
    return "; ".join([text, *more]) if text else "; ".join(more) or None


def failure_warnings(uniform: list[dict]) -> list[str]:
    """A warning per variant whose every attempt failed the same way (SeriesTally.uniform_failures)."""
    return [f"every attempt of variant {u['variant']} ({u['attempts']}) failed the same way: {_way(u)}; the metric "
            "measures that failure, not the question" for u in uniform]


def _way(u: dict) -> str:
    where = f" at node {u['node']}" if u["node"] else ""
    if u["outcome"] == "schema_invalid":
        return f"schema_invalid{where} (no answer fit its output fields)"
    return f"the infrastructure error {u['code']}{where}"


def fix_first(uniform: list[dict]) -> str:
    """The next step when some variant failed the same way every time: fix that, never go to held-out cases
    (they would be spent on measuring the failure)."""
    u = uniform[0]
    if u["outcome"] == "schema_invalid":
        what = (f"the prompt, output fields or agent of node {u['node']}" if u["node"] else "the flow or the provider")
        return (f"fix {what}: every answer of variant {u['variant']} failed its output fields (the attempts' errors "
                "name the field), then explore again on the working cases; a held-out run now would only measure "
                "this failure")
    return (f"fix the flow or the provider: every attempt of variant {u['variant']} hit {u['code']}"
            + (f" at node {u['node']}" if u["node"] else "") + " (-rs shows its message), then rerun")


def _num(x: Any) -> float | None:
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


def stability(tally: SeriesTally, repeats: int) -> dict[str, dict]:
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


def series_entry(conclusion: Conclusion, tally: SeriesTally, layout: dict, cap_usd: float | None,
                 plan: dict | None = None, project: str = ".") -> dict[str, Any]:
    """`tally`: the series' attempts (series/tally.py); `layout`: its question kind, variants, cases and
    repeats (from its database row); `project`: its root as the reports name it (relative to pytest's
    rootdir). Paths are relative, so a report reads the same on every machine."""
    word = state_word(conclusion)
    verdict = conclusion.verdict
    spend = tally.cost_sum + tally.check_cost_sum
    unpriced = tally.unpriced_calls
    reason = verdict.reason if verdict else None
    uniform = tally.uniform_failures() if verdict is not None else []
    cells = [cell_entry(c) for c in verdict.cells] if verdict else []
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
        "verdict": {"state": word, "reason": "provider_unusable", "sentence": conclusion.note} if conclusion.halted
        else None if verdict is None else {"state": word, "reason": reason, "sentence": verdict.text},
        "note": conclusion.note,
        "cells": cells,
        "stability": stability(tally, layout.get("repeats") or 1),
        "spend": {"usd": _num(spend), "cap_usd": _num(cap_usd), "unpriced_calls": unpriced,
                  "lower_bound": unpriced > 0},
        "launch_plan": plan,
        "warnings": failure_warnings(uniform),
        "next": fix_first(uniform) if uniform else next_step(word, reason, plan),
        "project": project,
        "finding_path": None if conclusion.finding is None
        else Path(conclusion.finding).relative_to(tally.root).as_posix(),
    }


def plan_entry(p: LaunchPlan) -> dict[str, Any]:
    """A stats.LaunchPlan as data."""
    o = p.observed
    observed = None if o is None else {"value": _num(o.value), "cases": o.cases, "edge": _num(o.edge),
                                       "recommended_cases": o.recommended_cases, "power": _num(o.power),
                                       "capped": o.capped, "text": o.text}
    return {"cases": p.cases, "repeats": p.repeats, "variants": p.variants, "attempts": p.attempts,
            "available": p.available, "recommended_cases": p.recommended_cases, "reason": p.reason,
            "half_width": _num(p.half_width), "below_recommended": p.below_recommended, "text": p.text,
            "search_pending": p.search_pending, "capped": p.capped, "observed": observed}
