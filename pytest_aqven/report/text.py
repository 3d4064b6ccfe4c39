"""Numbers as the verdict sentences print them (stats/wording.py), for figures shown outside a sentence."""
from __future__ import annotations


def figure(value: float | None, unit: str, signed: bool = False) -> str:
    from ..stats.wording import number   # lazy: stats imports numpy

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


def usd(value: float | None) -> str:
    if value is None:
        return "n/a"
    from ..stats.wording import usd as _usd

    return _usd(value, False)
