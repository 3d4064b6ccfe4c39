"""The `aqven verdicts` section of pytest's terminal summary."""
from __future__ import annotations

from pathlib import Path

COLOURS = {"confirmed": {"green": True}, "refuted": {"red": True}, "inconclusive": {"yellow": True},
           "invalid": {"red": True, "bold": True}, "signal": {"cyan": True}}


def launch_plans(tr, plans, notes: dict | None = None) -> None:
    if not plans:
        return
    tr.write_sep("=", "aqven launch plans")
    for experiment, split, p in plans:
        for line, warn in plan_lines(experiment, split, p):
            tr.write_line(line, yellow=warn)
        for note in (notes or {}).get(experiment, []):
            tr.write_line(f"  {note}")


def plan_lines(experiment: str, split: str, p) -> list[tuple[str, bool]]:
    """A launch plan as (line, is a warning) pairs: pytest --collect-only and `aqven plan` print the same."""
    lines = [(f"{experiment} ({split}): {_n(p.attempts, 'attempt')} ({_n(p.cases, 'case')} × "
              f"{_n(p.repeats, 'repeat')} × {_n(p.variants, 'variant')}), {p.available} cases available", False)]
    if p.below_recommended:
        lines.append((f"  below the recommended {p.recommended_cases} cases: {p.text}", True))
    else:
        lines.append((f"  {p.text}", False))
    if p.search_pending:
        lines.append((f"  closed form (optimistic for these intervals); `aqven plan {experiment}` runs the "
                      "simulated search and keeps it for the next --collect-only", False))
    elif p.power is not None:
        lines.append((f"  simulated: {p.power:.0%} power to decide at {p.recommended_cases} cases", False))
    return lines


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def check_warnings(tr, warnings: list[tuple[str, str]]) -> None:
    """`aqven check` warnings (module root, rendered text; in check order, maybe repeated by several
    xdist workers), printed as the CLI prints them: shown, never raised as Python warnings."""
    if not warnings:
        return
    tr.write_sep("=", "aqven check warnings")
    by_root: dict[str, list[str]] = {}
    for root, text in dict.fromkeys(warnings):
        by_root.setdefault(root, []).append(text)
    for root in sorted(by_root):
        if len(by_root) > 1:
            tr.write_line(f"{_shown(tr, Path(root))}:")
        for text in by_root[root]:
            tr.write_line(text, yellow=True)


def summary(tr, conclusions) -> None:
    if not conclusions:
        return
    tr.write_sep("=", "aqven verdicts")
    for nodeid, c in conclusions:
        head = f"{c.experiment} ({c.split}, {c.done}/{c.total} attempts): "
        if c.verdict is None:
            tr.write_line(head + f"no verdict: {c.note}", yellow=True)
            continue
        word = c.state or "look"
        tr.write(head)
        tr.write(word, **COLOURS.get(word, {}))
        tr.write_line(f" - {c.verdict.text}")
        deciders = sorted({cell.decided_by for cell in c.verdict.cells if cell.decided_by})
        if c.verdict.cells:
            family = c.verdict.cells[0].estimate.family
            tr.write_line(f"  intervals: {family}" + (f", decided by the {' and '.join(deciders)} interval"
                                                      if deciders else ""))
        if c.unpriced_calls:
            tr.write_line(f"  spend: at least ${c.spend_usd:.4f}, a lower bound: {c.unpriced_calls} calls had no "
                          "known price (cost metrics leave their attempts out)", yellow=True)
        if c.finding is not None:
            tr.write_line(f"  finding: {_shown(tr, c.finding)}")


def _shown(tr, path) -> str:
    try:
        return str(path.relative_to(tr.config.invocation_params.dir))
    except ValueError:
        return str(path)
