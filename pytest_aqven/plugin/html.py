"""pytest-html: a verdict section per experiment (sentence, cells, interval plot) above the results, and per
working-case attempt its inputs, output, checks, cost, latency and trace. Every user text is escaped;
held-out attempts show their outcome only. Registered only when pytest-html is active."""
from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import pytest

from ..record import AttemptRecord
from ..report import look, svg
from ..report.attempts import HELD_OUT
from ..report.text import cell_text, usd

if TYPE_CHECKING:
    pass

# badge backgrounds: each has a contrast of at least 4.5 with white text (tests/plugin/test_html_browser.py measures it)
TEXT = "#1f2328"
BADGE = {"confirmed": "#1a7f37", "refuted": "#cf222e", "invalid": "#a40e26", "inconclusive": "#9a6700",
         "signal": "#0969da", "open": "#57606a", "none": "#57606a"}

CSS = ("<style>.aqven-verdict{margin:12px 0;padding:8px 12px;border-left:4px solid #888}"
       ".aqven-verdict table,.aqven-attempt{border-collapse:collapse;margin:6px 0}"
       ".aqven-verdict td,.aqven-verdict th,.aqven-attempt td,.aqven-attempt th{border:1px solid #bbb;"
       "padding:2px 6px;text-align:left;vertical-align:top;white-space:pre-wrap}"
       # pytest-html greys table text (#999 on white, 2.8:1); ours is dark on white, 15:1 (WCAG AA asks 4.5)
       f".aqven-verdict,.aqven-verdict td,.aqven-verdict th{{color:{TEXT};background:#ffffff}}"
       ".aqven-state-confirmed{border-color:#1a7f37}.aqven-state-refuted,.aqven-state-invalid{border-color:#cf222e}"
       ".aqven-state-inconclusive{border-color:#bf8700}.aqven-state-signal{border-color:#0969da}"
       ".aqven-look-failed td{color:#cf222e}.aqven-verdict h3{color:#1f2328}"
       # the verdict word: white on a dark colour, at least 4.5:1 (WCAG AA) whatever the page's own colours
       ".aqven-badge{display:inline-block;padding:1px 10px;border-radius:10px;color:#ffffff;font-weight:bold}"
       + "".join(f".aqven-badge-{state}{{background:{colour}}}" for state, colour in BADGE.items()) + "</style>")


def _t(x: object) -> str:
    return escape(str(x), quote=True)


def verdict_section(entry: dict, look_table: str = "") -> str:
    v = entry["verdict"]
    state = v["state"] if v else "open"
    a, s = entry["attempts"], entry["spend"]
    spend = ("at least " if s["lower_bound"] else "") + usd(s["usd"]) + f" of {usd(s['cap_usd'])}"
    rows = "".join(
        f"<tr><td>{_t(c['role'])}</td><td>{_t(c['variant'] + (' vs ' + c['baseline'] if c['baseline'] else ''))}</td>"
        f"<td>{_t(c['metric'])}</td><td>{_t(cell_text(c))}</td><td>{_t(decided_by(c))}</td></tr>"
        for c in entry["cells"])
    table = ("<table><tr><th>role</th><th>variant</th><th>metric</th><th>estimate [95% CI], bound: cell verdict</th>"
             f"<th>decided by</th></tr>{rows}</table>") if rows else ""
    parts = [f'<section class="aqven-verdict aqven-state-{state}" data-experiment="{_t(entry["experiment"])}">',
             f"<h3>{_t(entry['experiment'])} ({_t(entry['split'])}): <span class=\"aqven-badge aqven-badge-{state}\" "
             f"data-state=\"{state}\">{_t('look' if state == 'none' else state)}</span></h3>",
             f'<p class="aqven-sentence">{_t(v["sentence"] if v else entry["note"])}</p>', table,
             svg.plot(entry["cells"], entry["experiment"]), look_table,
             f"<p>{a['done']}/{a['total']} attempts ({entry['cases']} cases × {entry['repeats']} repeats), "
             f"{a['failed_checks']} with failed checks, {a['infra_errors']} infrastructure errors; spend {_t(spend)}</p>"]
    if entry["next"]:
        parts.append(f"<p>Next: {_t(entry['next'])}</p>")
    if entry["finding_path"]:
        parts.append(f"<p>Finding: {_t(entry['finding_path'])}</p>")
    parts.append("</section>")
    return "".join(parts)


def decided_by(cell: dict) -> str:
    """The family whose bound decided the cell; an unclear cell was decided by neither."""
    if cell["decided_by"]:
        return cell["decided_by"]
    return "neither bound clears" if cell["verdict"] == "unclear" else cell["estimate"]["family"] or "-"


def look_html(split: str, records: list[AttemptRecord], kinds: dict[str, str]) -> str:
    """A look's table as the terminal prints it (report/look.py), with every reason whole; a failed row in red.
    A held-out look's says why it has none."""
    if split == "holdout":
        return f'<p class="aqven-look">{_t(look.HELD_OUT_LOOK)}</p>'
    head, lines, body = look.grid(records, kinds, cut=False)
    rows = "".join(f'<tr{" class=aqven-look-failed" if row["failed"] else ""}>'
                   + "".join(f"<td>{_t(c)}</td>" for c in cells) + "</tr>" for row, cells in zip(lines, body))
    return (f'<table class="aqven-look"><tr>{"".join(f"<th>{_t(h)}</th>" for h in head)}</tr>{rows}</table>')


def attempt_html(details: dict) -> str:
    """Compact markup (it travels inside pytest-html's JSON blob): few attributes, none quoted."""
    checks = "".join(f"<tr><td>{_t(cid)}<td>{_t(c['state'])}<td>{_t('' if c['value'] is None else c['value'])}"
                     f"<td>{_t(c['reason'] or '')}" for cid, c in details["checks"].items())
    nodes = "".join(f"<tr><td>{_t(n['node'])}<td>{_t(n['kind'])}<td>{_t(n['status'])}<td>{_t(n['model'] or '')}"
                    f"<td>{n['latency_ms']:.0f} ms<td>{_t(usd(n['cost_usd']))}<td>{_t(n['error'] or n['output'])}"
                    for n in details["trace"])
    cost = usd(details["cost_usd"]) + (f" (at least: {details['unpriced_calls']} unpriced calls)"
                                      if details["unpriced_calls"] else "")
    rows = [f"<tr><th>inputs<td>{_t(details['inputs'])}", f"<tr><th>output<td>{_t(details['output'])}",
            f"<tr><th>cost<td>{_t(cost)}", f"<tr><th>latency<td>{details['latency_ms'] or 0:.0f} ms"]
    if details["error"]:
        rows.append(f"<tr><th>error<td>{_t(details['error'])}")
    return (f"<table class=aqven-attempt>{''.join(rows)}</table>"
            f"<table class=aqven-attempt><tr><th>check<th>state<th>value<th>reason{checks}</table>"
            f"<table class=aqven-attempt><tr><th>node<th>kind<th>status<th>model<th>latency<th>cost<th>output{nodes}</table>")


class HtmlReport:
    def __init__(self, reporter) -> None:
        self.reporter = reporter          # the VerdictReporter: its entries are ready before pytest-html writes

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str], session: pytest.Session) -> None:
        if self.reporter.entries:
            looks = {records[0].series_id: look_html(split, records, kinds)
                     for _, split, records, kinds in self.reporter.looks if records}
            sections = [verdict_section(e, looks.get(e["series_id"], "")) for e in self.reporter.entries]
            prefix.extend([CSS, "<h2>AQVEN verdicts</h2>"] + sections)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_html(self, report: pytest.TestReport, data: list[str]) -> None:
        wire = getattr(report, "aqven_attempt", None)
        if wire is None or report.when != "call":
            return
        details = getattr(report, "aqven_details", None)
        record = AttemptRecord.carried(wire)
        if details is not None:
            data[:] = [attempt_html(details)]
        elif record.split == "holdout":
            data[:] = [_t(f"{record.outcome}, passed: {record.passed} ({HELD_OUT})")]
