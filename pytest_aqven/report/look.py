"""The table of a look: one row per case and variant, with each check's result and reason, cost and
latency; under -v also the output and the node that failed. A look has no verdict and writes no finding:
this table is what it gives. Held-out cases are never shown one by one, so a held-out look prints none."""
from __future__ import annotations

import json
from collections import defaultdict

from .. import codes
from ..record import NO_OUTPUT, AttemptRecord, CheckScore
from .terminal import Terminal

MAX_CELL = 48        # a reason longer than this is cut in the table; -v prints it whole below the row


def rows(records: list[AttemptRecord], kinds: dict[str, str]) -> list[dict]:
    """One row per (case, variant) in the order attempts came, repeats folded into the row."""
    groups: dict[tuple[str, str], list[AttemptRecord]] = defaultdict(list)
    for r in sorted(records, key=lambda r: (r.case, r.variant, r.repeat)):
        groups[(r.case, r.variant)].append(r)
    out = []
    for (case, variant), attempts in groups.items():
        checks = {cid: _check_cell([r.checks[cid] for r in attempts if cid in r.checks], kinds.get(cid, "binary"))
                  for cid in dict.fromkeys(c for r in attempts for c in r.checks)}
        counted = [r for r in attempts if r.outcome not in codes.UNCOUNTED]
        out.append({
            "case": case, "variant": variant, "attempts": attempts, "checks": checks,
            "outcome": _outcome(attempts),
            "failed": any(r.passed is not True for r in attempts) or any(c[2] for c in checks.values()),
            "cost_usd": _mean([r.cost_usd for r in counted]),
            "check_cost_usd": _mean([r.check_cost_usd or 0.0 for r in counted]),
            "latency_ms": _mean([r.latency_ms for r in counted]),
        })
    return out


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _outcome(attempts: list[AttemptRecord]) -> str:
    kinds = [r.outcome for r in attempts]
    if len(set(kinds)) == 1:
        return kinds[0]
    return ", ".join(f"{k} {kinds.count(k)}" for k in dict.fromkeys(kinds))


def _check_cell(results: list[CheckScore], kind: str) -> tuple[str, str | None, bool]:
    """(the result, the first reason, whether it failed): pass / FAIL, k/n pass over repeats, the mean
    score of an ordinal or continuous check, or error / skipped."""
    failing = [c for c in results if c.state in ("failed", "error")]
    reason = next((c.reason for c in failing if c.reason), None)
    scored = [c for c in results if c.state in ("passed", "failed")]
    errors = len(results) - len(scored) - sum(1 for c in results if c.state == "skipped")
    if not scored:
        return ("error" if errors else "skipped"), reason, bool(errors)
    if kind == "binary":
        passed = sum(1 for c in scored if c.state == "passed")
        text = ("pass" if passed else "FAIL") if len(scored) == 1 else f"{passed}/{len(scored)} pass"
    else:
        mean = _mean([c.value for c in scored])     # of the scores that carry a value
        text = "-" if mean is None else f"{mean:.3g}"
        reason = reason or next((c.reason for c in scored if c.reason), None)
    if errors:
        text += f" ({errors} error{'s' if errors > 1 else ''})"
    return text, reason, bool(failing)


HELD_OUT_LOOK = "held-out cases are never shown one by one: the attempts are in the database"


def grid(records: list[AttemptRecord], kinds: dict[str, str], cut: bool = True) -> tuple[list[str], list[dict], list[list[str]]]:
    """The table every reporter shows (terminal, html, junit): its head, its rows (as rows() gives them) and
    each row's cells as text; with cut, a reason longer than MAX_CELL is cut."""
    lines = rows(records, kinds)
    check_ids = list(dict.fromkeys(c for row in lines for c in row["checks"]))
    judged = any(row["check_cost_usd"] for row in lines)
    head = ["case", "variant", *check_ids, "cost $", *(["judges $"] if judged else []), "latency ms"]
    body = []
    for row in lines:
        cells = [row["case"], row["variant"]]
        for cid in check_ids:
            text, reason, _ = row["checks"].get(cid, ("-", None, False))
            text = f"{text}: {reason}" if reason else text
            cells.append(_cut(text) if cut else text)
        cells.append(_money(row["cost_usd"]))
        if judged:
            cells.append(_money(row["check_cost_usd"]))
        cells.append("-" if row["latency_ms"] is None else f"{row['latency_ms']:.0f}")
        if row["outcome"] != "ok":
            cells[0] += f" [{row['outcome']}]"
        body.append(cells)
    return head, lines, body


def table(tr: Terminal, experiment: str, split: str, records: list[AttemptRecord], kinds: dict[str, str]) -> None:
    tr.write_sep("-", f"aqven look: {experiment} ({split}, {len(records)} attempts)")
    if split == "holdout":
        tr.write_line(HELD_OUT_LOOK)
        return
    verbose = tr.config.getoption("verbose") > 0
    head, lines, body = grid(records, kinds)
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    tr.write_line("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(), bold=True)
    for row, cells in zip(lines, body):
        tr.write_line("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip(), red=row["failed"])
        if verbose:
            _details(tr, row)


def _details(tr: Terminal, row: dict) -> None:
    for r in row["attempts"]:
        tag = f"  #{r.repeat} " if len(row["attempts"]) > 1 else "  "
        if r.output is not NO_OUTPUT:
            tr.write_line(f"{tag}output: {json.dumps(r.output, ensure_ascii=False, default=str)}")
        if r.first_failed_node:
            tr.write_line(f"{tag}failing node: {r.first_failed_node}: {r.error_code}: {r.error_message}")
        elif r.error_code:
            tr.write_line(f"{tag}error: {r.error_code}: {r.error_message}")
        for cid, c in r.checks.items():
            if c.reason and len(c.reason) > MAX_CELL:
                tr.write_line(f"{tag}{cid}: {c.reason}")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
