"""One attempt as text, for `aqven series show <id> --case NAME`: its outcome, cost and latency, each check with
its value and reason, then its trace node by node (kind, input, output, every model call with tokens, cost,
latency and what followed it, inference checks, errors with the user-code location) and each judge's trace."""
from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from ..record import AttemptRecord


def usd(v: float | None) -> str:
    """A cost as every report prints it (report/text.py shows it from here), n/a when unknown."""
    if v is None:
        return "n/a"
    from ..stats.wording import usd as _usd  # lazy: stats imports numpy, and the plugin imports the reports

    return _usd(v, False)


def value(v: Any) -> str:
    """A value in full, as JSON (one line, unambiguous: a string shows its quotes and escapes)."""
    return json.dumps(v, ensure_ascii=False, default=str, sort_keys=True)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} ms"


def _when(ts: float | None) -> str:
    return "-" if ts is None else datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def attempt_lines(r: AttemptRecord) -> list[str]:
    passed = "passed" if r.passed else "not passed"
    lines = [f"{r.experiment} {r.variant} {r.case} #{r.repeat} ({r.split}): {r.outcome}, {passed}"]
    cost = usd(r.cost_usd) + (f" (at least: {r.unpriced_calls} unpriced calls)" if r.unpriced_calls else "")
    if r.check_cost_usd:
        cost += f", judges {usd(r.check_cost_usd)}"
    lines.append(f"  cost {cost}; latency {_ms(r.latency_ms)}; tokens {r.tokens_in or 0} in, {r.tokens_out or 0} out")
    if r.started_at is not None:
        lines.append(f"  ran {_when(r.started_at)}, {((r.finished_at or r.started_at) - r.started_at) * 1000:.0f} ms wall")
    trace = r.trace or {}
    if r.error_code:
        where = f" (node {r.first_failed_node})" if r.first_failed_node else ""
        lines.append(f"  error{where}: {r.error_code}: {r.error_message}")
        error = trace.get("error") or {}
        lines += [f"    {line}" for line in (error.get("traceback") or "").rstrip().splitlines()]
    lines.append(f"  output: {value(trace.get('output'))}")
    if r.checks:
        lines.append("  checks:")
        width = max(len(c) for c in r.checks)
        for cid, c in r.checks.items():
            shown = "-" if c.value is None else f"{c.value:g}" if isinstance(c.value, float) else str(c.value)
            lines.append(f"    {cid.ljust(width)}  {c.state}  value {shown}" + (f"  {c.reason}" if c.reason else ""))
    lines.append(f"  trace ({len(trace.get('nodes') or [])} node executions, {_ms(trace.get('latency_ms'))}):")
    lines += nodes_lines(trace.get("nodes") or [], "    ")
    for check, judge in (trace.get("judges") or {}).items():
        lines.append(f"  judge {check} ({_ms(judge.get('latency_ms'))}):")
        error = judge.get("error")
        if error:
            lines.append(f"    error: {error.get('code')}: {error.get('message')}")
        lines.append(f"    output: {value(judge.get('output'))}")
        lines += nodes_lines(judge.get("nodes") or [], "    ")
    return lines


def nodes_lines(nodes: list[dict], indent: str) -> list[str]:
    """Each node execution in the order it started, indented under the container (or call node) it ran in."""
    depth: dict[str, int] = {}
    lines = []
    for n in nodes:
        parent = n.get("parent")
        level = depth.get(parent, -1) + 1 if parent else 0
        depth[n["node"]] = level
        pad = indent + "  " * level
        where = ", ".join(f"{k} {n[k]}" for k in ("branch", "iteration", "item") if n.get(k) is not None)
        cost = sum(c.get("cost_usd") or 0.0 for c in n.get("calls") or [])
        head = f"{pad}{n['node']}{f' [{where}]' if where else ''} ({n['kind']}): {n['status']}, {_ms(n.get('latency_ms'))}"
        if n.get("calls"):
            head += f", {'at least ' if any(c.get('cost_usd') is None for c in n['calls']) else ''}{usd(cost)}"
        if n.get("model"):       # "answered by" only when a call brought an answer back
            calls = n.get("calls") or []
            answered = any(c.get("outcome") != "error" for c in calls) if calls else n.get("status") == "ok"
            head += f", answered by {n['model']}" if answered else f", {n['model']} did not answer"
        lines.append(head)
        lines.append(f"{pad}  input: {value(n.get('input'))}")
        if n.get("status") == "ok" or n.get("output") is not None:
            lines.append(f"{pad}  output: {value(n.get('output'))}")
        for i, c in enumerate(n.get("calls") or [], 1):
            lines.append(f"{pad}  call {i}: {_call(c)}")
        for c in n.get("checks") or []:
            lines.append(f"{pad}  check {c['check']} (on_fail {c['on_fail']}, answer {c.get('attempt', 1)}): "
                         f"{'passed' if c['passed'] else 'failed'}" + (f": {c['reason']}" if c.get("reason") else ""))
        if n.get("detail"):
            lines.append(f"{pad}  detail: {value(n['detail'])}")
        if n.get("error_code"):
            at = f" at {n['error_location']}" if n.get("error_location") and n["error_location"] not in (n.get("error_message") or "") else ""
            lines.append(f"{pad}  error: {n['error_code']}: {n['error_message']}{at}")
    return lines


def _call(c: dict) -> str:
    cost = "unpriced" if c.get("cost_usd") is None else f"{usd(c['cost_usd'])} ({c.get('cost_source', 'unknown')})"
    parts = [f"{c['model']} {c['outcome']}", f"tokens {c.get('tokens_in') or 0} in, {c.get('tokens_out') or 0} out",
             cost, _ms(c.get("latency_ms"))]
    if c.get("schema_valid") is not None:
        parts.append("fits the schema" if c["schema_valid"] else "does not fit the schema")
    if c.get("retries"):
        parts.append("after transport retries " + ", ".join(f"{cause} (waited {wait:g} s)" for cause, wait in c["retries"]))
    if c.get("error"):
        parts.append(f"error {c['error']}")
    if c.get("action"):
        parts.append(f"then {c['action']}" + (f" ({c['cause']})" if c.get("cause") else ""))
    return "; ".join(parts)
