"""What an attempt's test report says: a short reason and longrepr (never pytest's traceback), the
details pytest-html shows, and the held-out redaction (seeds: held-out cases are never shown one by one)."""
from __future__ import annotations

import json
from typing import Any

from .. import codes
from ..record import AttemptRecord

INFRA = codes.UNCOUNTED
HELD_OUT = "held out: details stay in the database"
MAX_TEXT = 2000          # characters of one input, output or node output shown in the html report


def held_out(record: AttemptRecord) -> bool:
    return record.split == "holdout"


def failed_checks(record: AttemptRecord) -> list[tuple[str, str]]:
    return [(cid, c.reason or c.state) for cid, c in record.checks.items() if c.state in ("failed", "error")]


def reason(record: AttemptRecord) -> str:
    """One line: the xfail / skip reason (terminal -rx / -rs, junit's message)."""
    if record.outcome in INFRA:
        if held_out(record):      # the message without case data (where the error was, never a value), if any
            public = record.error_public
            return f"{record.error_code}: {public}" if public else f"{record.error_code} ({HELD_OUT})"
        return f"{record.error_code}: {record.error_message}"
    if held_out(record):
        failed = [cid for cid, _ in failed_checks(record)]
        return f"failed {', '.join(failed) or record.outcome} ({HELD_OUT})"
    failed = [f"{cid}: {why}" for cid, why in failed_checks(record)]
    return "; ".join(failed) or f"{record.outcome}: {record.error_message}"


def longrepr(record: AttemptRecord) -> str:
    """Several lines: each failed check with its reason, or the error; the outcome only when held out."""
    head = f"{record.experiment} {record.variant} {record.case} #{record.repeat}: {record.outcome}"
    if held_out(record):
        public = record.error_public if record.outcome in INFRA else None
        if public:
            return f"{head}\n  {record.error_code}: {public}"
        return f"{head} ({HELD_OUT}; `aqven series show --reveal` shows them)"
    if record.outcome in INFRA:
        return f"{head}\n  {record.error_code}: {record.error_message}"
    lines = [head] + [f"  {cid}: {record.checks[cid].state} - {why}" for cid, why in failed_checks(record)]
    if len(lines) == 1 and record.error_message:
        lines.append(f"  {record.error_code}: {record.error_message}")
    return "\n".join(lines)


def _short(value: Any) -> Any:
    """JSON text of a value, cut to MAX_TEXT characters (the html report stays small)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def details(record: AttemptRecord, trace: dict | None, inputs: Any) -> dict | None:
    """What the html report shows of a working-case attempt: inputs, output, checks with reasons, cost,
    latency and the trace per node. None for held-out attempts: they are never shown one by one."""
    if held_out(record):
        return None
    trace = trace or {}
    nodes = [{"node": n["node"], "kind": n["kind"], "status": n["status"], "model": n.get("model"),
              "latency_ms": round(n.get("latency_ms") or 0.0, 1),
              "cost_usd": sum(c.get("cost_usd") or 0.0 for c in n.get("calls", [])),
              "calls": len(n.get("calls", [])),
              "error": f"{n['error_code']}: {n['error_message']}" if n.get("error_code") else None,
              "output": _short(n.get("output"))} for n in trace.get("nodes", [])]
    return {"inputs": _short(inputs), "output": _short(trace.get("output")),
            "checks": {cid: {"state": c.state, "value": c.value, "reason": c.reason} for cid, c in record.checks.items()},
            "cost_usd": record.cost_usd, "unpriced_calls": record.unpriced_calls,
            "latency_ms": record.latency_ms, "error": reason(record) if record.outcome in INFRA else None,
            "trace": nodes}
