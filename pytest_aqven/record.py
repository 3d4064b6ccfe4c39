"""The attempt record: what one attempt of a series measured, typed and versioned, with ONE wire form.

The wire form (`to_wire()`, a JSON-ready dict) is what the project database stores per attempt and what an
xdist worker's report carries to the controller (in one process the report carries the record itself, `carried`);
`from_wire` reads it back, upgrading a row written by an older version first (`upgrade`, the one place that knows
the old shapes). A record is converted only at those two boundaries. Imports nothing heavy.
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Any

VERSION = 2     # 1: the rows written before the record had a version (no `version` key)


@dataclass(frozen=True)
class CheckScore:
    """One check's result on an attempt: passed, failed, error or skipped; its value and why."""
    state: str
    value: float | None = None
    reason: str | None = None


class _NoOutput:
    def __repr__(self) -> str:
        return "NO_OUTPUT"


NO_OUTPUT: Any = _NoOutput()    # a record that carries no output (only a look's working attempts carry one)


@dataclass(frozen=True, kw_only=True)
class AttemptRecord:
    version: int = VERSION
    series_id: str
    experiment: str
    variant: str
    case: str
    repeat: int
    split: str                      # dev or holdout
    outcome: str                    # pytest_aqven.codes: ok, model_fail, schema_invalid, ..., infra_error
    passed: bool | None             # None: not counted (an infrastructure error)
    checks: dict[str, CheckScore]
    cost_usd: float | None          # the subject's calls that were priced
    check_cost_usd: float           # the judges' calls: series spend, not the cost metric
    unpriced_calls: int             # calls nothing priced: the spend is then a lower bound
    cost_known: bool                # every call of the subject priced: cost metrics may use cost_usd
    latency_ms: float | None
    tokens_in: int | None
    tokens_out: int | None
    schema_valid_first_try: bool | None
    models: dict[str, str]          # node -> model
    error_code: str | None
    error_message: str | None
    error_public: str | None        # the message without case data (held-out reports show it), or None
    first_failed_node: str | None
    started_at: float | None
    finished_at: float | None
    trace: dict | None = None       # per-node outputs, calls, errors: stored, never sent to the controller
    cost_bound_usd: float | None = None   # the most the subject's calls could have cost (max_tokens), None: unknown
    # what the session adds where the attempt was reported
    reused: bool = False            # finished in an earlier session of its series
    root: str | None = None         # the module root
    file_nodeid: str | None = None  # its experiment file's node id
    output: Any = NO_OUTPUT         # the flow's output, for a look's table (-v)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict the database stores and xdist carries, in field order (the fields after
        `finished_at` only when set)."""
        wire = {}
        for name, default in _FIELDS:
            value = getattr(self, name)
            if default is MISSING or value is not default or name == "version":
                wire[name] = value
        wire["checks"] = {cid: {"state": c.state, "value": c.value, "reason": c.reason} for cid, c in self.checks.items()}
        return wire

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> AttemptRecord:
        """The record of a wire dict of any version (upgraded first); a key it does not know is an error."""
        data = upgrade(wire)
        unknown = set(data) - _NAMES
        if unknown:
            raise ValueError(f"an attempt record of version {data['version']} with unknown keys: {sorted(unknown)}")
        checks = {cid: CheckScore(c["state"], c.get("value"), c.get("reason")) for cid, c in data["checks"].items()}
        return cls(**{**data, "checks": checks})

    @classmethod
    def carried(cls, value: AttemptRecord | dict[str, Any]) -> AttemptRecord:
        """The record an attempt's call report carries (`aqven_attempt`): the record itself in the process that
        ran it, its wire form from an xdist worker (read here, once, on the controller's side)."""
        return value if isinstance(value, AttemptRecord) else cls.from_wire(value)


def upgrade(wire: dict[str, Any]) -> dict[str, Any]:
    """A wire dict in the shape of this VERSION. Version 1 rows may lack: version, check_cost_usd (no
    judges' spend), unpriced_calls, cost_known (then known when no call was unpriced), models, the error
    fields (none) and the tokens (unknown)."""
    version = wire.get("version", 1)
    if version == VERSION:
        return wire
    if version != 1:
        raise ValueError(f"an attempt record of version {version}: this pytest-aqven reads versions 1 to {VERSION}")
    unpriced = wire.get("unpriced_calls") or 0
    return {"check_cost_usd": 0.0, "unpriced_calls": unpriced, "cost_known": not unpriced, "models": {},
            "error_code": None, "error_message": None, "error_public": None, "first_failed_node": None,
            "tokens_in": None, "tokens_out": None,
            **{k: v for k, v in wire.items() if k in _NAMES},      # a key since dropped goes (nothing reads it)
            "checks": {cid: {"value": None, "reason": None, **c} for cid, c in wire["checks"].items()},
            "version": VERSION}


_FIELDS = [(f.name, f.default) for f in fields(AttemptRecord)]
_NAMES = {f.name for f in fields(AttemptRecord)}
