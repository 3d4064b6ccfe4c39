"""The `aqven verdicts` section of pytest's terminal summary."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..stats.model import LaunchPlan

COLOURS = {"confirmed": {"green": True}, "refuted": {"red": True}, "inconclusive": {"yellow": True},
           "invalid": {"red": True, "bold": True}, "signal": {"cyan": True}}


class Terminal(Protocol):
    """What the report writes with: pytest's TerminalReporter, typed by shape (report/ imports no pytest)."""
    config: Any
    currentfspath: Any
    _tw: Any

    def write(self, content: str, *, flush: bool = False, **markup: bool) -> None: ...
    def write_line(self, line: str, **markup: bool) -> None: ...
    def write_sep(self, sep: str, title: str | None = None, **markup: bool) -> None: ...
    def ensure_newline(self) -> None: ...


def launch_plans(tr: Terminal, plans: Sequence[tuple[str, str, LaunchPlan]], notes: dict | None = None) -> None:
    if not plans:
        return
    tr.write_sep("=", "aqven launch plans")
    for experiment, split, p in plans:
        for line, warn in plan_lines(experiment, split, p):
            tr.write_line(line, yellow=warn)
        for note in (notes or {}).get(experiment, []):
            tr.write_line(f"  {note}")


def plan_lines(experiment: str, split: str, p: LaunchPlan) -> list[tuple[str, bool]]:
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
    elif p.capped:
        lines.append((f"  simulated: the search reached its cap, {p.recommended_cases} cases, with {p.power:.0%} power: "
                      "more cases are needed", True))
    elif p.power is not None:
        lines.append((f"  simulated: {p.power:.0%} power to decide at {p.recommended_cases} cases", False))
    if p.observed is not None:
        short = p.observed.recommended_cases is not None and p.observed.recommended_cases > p.available
        lines.append((f"  {p.observed.text}" + (f", but only {p.available} are available" if short else ""),
                      (p.observed.recommended_cases is None and not p.observed.search_pending)
                      or p.observed.capped or short))
    return lines


def plan_line(experiment: str, split: str, p: LaunchPlan) -> str:
    """One line before a real run: attempts, and the closed-form recommendation when it says more cases."""
    line = (f"aqven plan {experiment} ({split}): {p.attempts} attempts ({p.cases} cases × {p.repeats} repeats × "
            f"{p.variants} variant{'s' if p.variants > 1 else ''})")
    observed = f"; {p.observed.text}" if p.observed is not None else ""
    if p.below_recommended:
        how = " (closed form)" if p.search_pending else ""
        return f"{line}; below the recommended {p.recommended_cases} cases{how}: {p.text}{observed}"
    return f"{line}; {p.text}{observed}"


def _n(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def check_warnings(tr: Terminal, warnings: list[tuple[str, str]]) -> None:
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


HEADER = ("experiment", "question", "variants", "verdict", "estimate [95% CI]", "against", "cases×repeats",
          "attempts", "infra", "spend of cap")


def row(entry: dict) -> tuple[str, ...]:
    """One experiment: its primary cell's estimate and interval against the bound or margin."""
    from .text import against, figure, interval, pair_words, usd

    verdict = entry["verdict"]
    primary = next((c for c in entry["cells"] if c["role"] == "primary"), None)
    estimate = bound = "-"
    if primary is not None:
        e = primary["estimate"]
        estimate = pair_words(primary, short=True) if primary["baseline"] is not None else \
            f"{figure(e['value'], e['unit'])} {interval(e)}"
        bound = against(primary).removeprefix("against ")
        if len([c for c in entry["cells"] if c["role"] == "primary"]) > 1:
            estimate = f"{primary['variant']}: {estimate} (+{len(entry['cells']) - 1})"
    spend = entry["spend"]
    spent = ("≥" if spend["lower_bound"] else "") + usd(spend["usd"])
    a = entry["attempts"]
    variants = (f"{primary['variant']} vs {primary['baseline']}" if primary and primary["baseline"]
                else ", ".join(entry["variants"]))
    return (entry["experiment"], entry["question"] or "-", variants, verdict["state"] if verdict else "open", estimate, bound,
            f"{entry['cases']}×{entry['repeats']}", f"{a['done']}/{a['total']}", str(a["infra_errors"]),
            f"{spent} of {usd(spend['cap_usd'])}")


def table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def summary(tr: Terminal, entries: list[dict], unrun: Sequence[tuple[str, str, str, str]] = ()) -> None:
    """The table (one row per experiment), then each verdict's sentence and, unless confirmed, what to do
    next. -q: the sentences only; -v: every cell, the interval family and the stability of repeats. `unrun`:
    (experiment, split, why, state) of the verdicts left undecided (no attempt reached them, a held-out verdict
    was not selected: open; a permanent error stopped the series: invalid) and why."""
    if not entries:
        if unrun:
            tr.write_sep("=", "aqven verdicts")
        for undecided in unrun:
            _unrun_line(tr, *undecided)
        return
    verbosity = tr.config.get_verbosity()
    tr.write_sep("=", "aqven verdicts")
    if verbosity >= 0:
        lines = table([HEADER] + [row(e) for e in entries])
        tr.write_line(lines[0], bold=True)
        for entry, line in zip(entries, lines[1:]):
            word = entry["verdict"]["state"] if entry["verdict"] else "open"
            tr.write_line(line, **COLOURS.get(word, {}))
        if any(e["spend"]["lower_bound"] for e in entries):
            tr.write_line("≥: some calls had no known price, so the spend is a lower bound")
    for entry in entries:
        _verdict(tr, entry, verbosity)
    for undecided in unrun:
        _unrun_line(tr, *undecided)


def _unrun_line(tr: Terminal, experiment: str, split: str, why: str, state: str) -> None:
    if state == "open":
        tr.write_line(f"{experiment} ({split}): no verdict: {why}", yellow=True)
    else:
        tr.write(f"{experiment} ({split}): ")
        tr.write(state, **COLOURS.get(state, {}))
        tr.write_line(f" - {why}")


def _verdict(tr: Terminal, entry: dict, verbosity: int) -> None:
    from .text import cell_text

    a = entry["attempts"]
    head = f"{entry['experiment']} ({entry['split']}, {a['done']}/{a['total']} attempts): "
    verdict = entry["verdict"]
    if verdict is None:
        tr.write_line(head + f"no verdict: {entry['note']}", yellow=True)
        return
    word = verdict["state"] if verdict["state"] != "none" else "look"
    tr.write(head)
    tr.write(word, **COLOURS.get(word, {}))
    tr.write_line(f" - {verdict['sentence']}")
    if verbosity > 0:
        for cell in entry["cells"]:     # a pair's text names both variants
            name = f" {cell['variant']}" if cell["baseline"] is None else ""
            tr.write_line(f"  {cell['role']}{name} {cell['metric']}: {cell_text(cell)}")
        deciders = sorted({c["decided_by"] for c in entry["cells"] if c["decided_by"]})
        if entry["cells"]:
            tr.write_line(f"  intervals: {entry['cells'][0]['estimate']['family']}"
                          + (f", decided by the {' and '.join(deciders)} interval" if deciders else ""))
        for variant, s in entry["stability"].items():
            pass_k = "n/a" if s["pass_hat_k"] is None else f"{s['pass_hat_k']:.2f}"
            tr.write_line(f"  stability {variant}: {s['always']} cases always passed, {s['never']} never, "
                          f"{s['flaky']} flaky; pass^{s['k']} {pass_k}")
    for warning in entry.get("warnings", []):
        tr.write_line(f"  warning: {warning}", yellow=True)
    spend = entry["spend"]
    if spend["unpriced_calls"]:
        tr.write_line(f"  spend: at least ${spend['usd'] or 0:.4f}, a lower bound: {spend['unpriced_calls']} calls had no "
                      "known price (cost metrics leave their attempts out)", yellow=True)
    if entry["next"] and verbosity >= 0:
        tr.write_line(f"  next: {entry['next']}")
    if entry["finding_path"]:
        tr.write_line(f"  finding: {_shown(tr, tr.config.rootpath / entry['project'] / entry['finding_path'])}")


def _shown(tr: Terminal, path: Path) -> str:
    try:
        return str(path.relative_to(tr.config.invocation_params.dir))
    except ValueError:
        return str(path)


def standing(tr: Terminal, entries: list[dict]) -> None:
    """Held-out experiments whose cases were spent: the finding that stands, and how to get fresh cases."""
    if not entries:
        return
    tr.write_sep("=", "aqven standing findings")
    for entry in sorted(entries, key=lambda e: e["file_nodeid"]):
        tr.write_line(f"{entry['experiment']} (holdout, nothing ran): {entry['state']} - {entry['statement']}",
                      **COLOURS.get(entry["state"] or "", {}))
        tr.write_line(f"  finding: {entry['finding']}")
        tr.write_line(f"  {entry['why']}")
