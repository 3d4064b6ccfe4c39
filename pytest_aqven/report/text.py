"""Numbers as the verdict sentences print them (stats/wording.py), for figures shown outside a sentence."""
from __future__ import annotations

from ..series.attempt_text import usd as usd  # the one cost formatter, for the reports


def figure(value: float | None, unit: str, signed: bool = False) -> str:
    from ..stats.wording import number  # lazy: stats imports numpy

    return number(value, unit, signed)


def interval(estimate: dict, signed: bool = False) -> str:
    """`[low, high]` of a cell's estimate (as data), or why there is none."""
    low, high, unit = estimate["low"], estimate["high"], estimate["unit"]
    if low is None and high is None:
        from ..stats.wording import DEGENERATE_WORDS

        return f"(no 95% CI: {DEGENERATE_WORDS.get(estimate.get('degenerate') or 'numeric', 'not computable')})"
    lo = "-inf" if low is None else figure(low, unit, signed)
    hi = "+inf" if high is None else figure(high, unit, signed)
    return f"[{lo}, {hi}]"


# How a pair cell reads in words. Internally every pair estimate is oriented "positive = the candidate better"
# (docs/reports.md#cells-in-words): a difference for absolute cells; for relative guardrails the log ratio of
# the candidate to the baseline (cost_of_pass, latencies) or the contrast with (1 ∓ margin) × the baseline
# (rates, means). Words undo that orientation: which variant, which way, how much, in the metric's unit.
WAYS = {"ms": ("slower", "faster"), "usd": ("dearer", "cheaper")}      # unit -> (raw value higher, lower)
RATIO_WORDS = {"cost_of_pass": "costs {r} {base} per pass", "latency_p50_ms": "takes {r} the median latency of {base}",
               "latency_p95_ms": "takes {r} the p95 latency of {base}"}


def _raw(cell: dict, x: float) -> float:
    """From the good-direction scale back to the metric's own: candidate minus baseline (or its log ratio)."""
    return -x if cell["direction"] == "lower_is_better" else x


def _way(d: float, unit: str) -> str:
    """Which way a raw difference goes, in the unit's words: `ms faster`, `cheaper`, `lower`."""
    if unit in WAYS:
        return ("ms " if unit == "ms" else "") + WAYS[unit][d < 0]
    return "lower" if d < 0 else "higher"


def _span(lo: float, hi: float, unit: str, what: str = "") -> str:
    """An interval of raw differences in words: `508 to 566 ms faster`, `0.27 lower to 0.18 higher`."""
    if lo * hi > 0:
        small, big = sorted((abs(lo), abs(hi)))
        return f"{figure(small, unit)} to {figure(big, unit)} {_way(lo, unit)}{what}"
    return " to ".join(f"{figure(abs(x), unit)} {_way(x, unit)}" if x else "0" for x in (lo, hi)) + what


def pair_words(cell: dict, short: bool = False) -> str:
    """`nano 547 ms faster than mid (better); 95% CI 508 to 566 ms faster`, `nano costs 0.23x mid per pass
    (better); 95% CI 0.20x to 0.27x`: the cell's estimate as which variant is better and by how much. `short`:
    without the variants' names, `547 ms faster [508 to 566 ms faster]` (a table whose row names them)."""
    import math

    e, cand, base = cell["estimate"], cell["variant"], cell["baseline"]
    v, low, high, unit = e["value"], e["low"], e["high"], e["unit"]
    missing = interval(e, True).strip("()") if low is None or high is None else None
    if v is None:
        return (missing or "n/a") if short else f"{cand} vs {base}: {missing or 'n/a'}"
    better = "better" if v > 0 else "worse" if v < 0 else "no difference"
    if unit == "log_ratio":
        how = RATIO_WORDS.get(cell["metric"], "has {r} the " + cell["metric"] + " of {base}")
        r = f"{figure(math.exp(_raw(cell, v)), 'ratio')}x"
        head = f"{r} {base}" if short else f"{cand} {how.format(r=r, base=base)} ({better})"
        if missing:
            return f"{head}; {missing}"
        lo, hi = sorted(math.exp(_raw(cell, x)) for x in (low, high))
        span = f"{figure(lo, 'ratio')}x to {figure(hi, 'ratio')}x"
    elif cell["relative"]:      # a contrast: the candidate against (1 - m) or (1 + m) times the baseline
        factor = 1 + cell["margin"] if cell["direction"] == "lower_is_better" else 1 - cell["margin"]
        word = {x: f"{figure(abs(x), unit)} {'better' if x > 0 else 'worse'}" if x else "0" for x in (v, low, high)}
        head = f"{word[v]} than {factor:g} × {base}" if short else f"{cand} {word[v]} than {factor:g} × {base}"
        if missing:
            return f"{head}; {missing}"
        span = f"{word[low]} to {word[high]}"
    else:
        d = _raw(cell, v)
        amount = f"{figure(abs(d), unit)} {_way(d, unit)}" if d else "the same"
        head = amount if short else (f"{cand} {amount} than {base} ({better})" if d else f"{cand} the same as {base}")
        if missing:
            return f"{head}; {missing}"
        lo, hi = sorted((_raw(cell, low), _raw(cell, high)))
        span = _span(lo, hi, unit)
    return f"{head} [{span}]" if short else f"{head}; 95% CI {span}"


def cell_text(cell: dict) -> str:
    """A cell in one line; a pair's in words (which variant is better, by how much, in the metric's unit)."""
    e = cell["estimate"]
    if cell["baseline"] is not None:
        return f"{pair_words(cell)}; {against(cell)}: {cell['verdict']}"
    return f"{figure(e['value'], e['unit'])} {interval(e)} {against(cell)}: {cell['verdict']}"


def against(cell: dict) -> str:
    if cell["bound"]:
        return f"against {cell['bound']} {cell['threshold']:g} with margin {cell['margin']:g}"
    return f"against the relative margin {cell['margin']:g}" if cell["relative"] else f"against margin {cell['margin']:g}"
