"""What a run records: per node execution (by address) its input, output, model calls, checks, errors."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, overload

from .. import codes

MAX_CALL_DEPTH = 8         # calls and subagents nested deeper are the error E_CALL_DEPTH


@dataclass(frozen=True)
class Address:
    """Which execution of a node: AQVEN's {node_id, branch_key, iteration, item_index}.

    `node` is the expanded id: a container's child is `<container>__<child>`, a called flow's node
    `<call node>__<node>`."""
    node: str
    branch: str | None = None
    iteration: int | None = None
    item: int | None = None

    def at(self, node_id: str, **where: Any) -> "Address":
        return replace(self, node=f"{self.node}__{node_id}" if self.node else node_id, **where)


@dataclass
class CallTrace:
    model: str
    outcome: str                     # ok | refusal | truncated | error
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None    # None: no source priced the call
    cost_source: str = "unknown"     # provider | openrouter | genai_prices | unknown | failed (no answer, nothing billed)
    latency_ms: float = 0.0
    schema_valid: bool | None = None
    error: str | None = None
    action: str | None = None        # what followed this call: retry | repair | fallback | None (it was the last)
    cause: str | None = None         # why it did not end the node: refusal, schema_invalid, check <id>, ...
    retries: list = field(default_factory=list)   # transport retries before it: [cause, wait in s]
    cost_bound_usd: float | None = None   # the most it could have cost (ModelResponse.cost_bound_usd); None: unknown


@dataclass
class CheckTrace:
    check: str
    on_fail: str
    passed: bool
    reason: str | None = None
    attempt: int = 1


@dataclass
class NodeTrace:
    node: str                        # expanded id (see Address)
    kind: str
    status: str = "running"          # running | ok | failed | cancelled
    output: Any = None
    latency_ms: float = 0.0          # model latency as reported for llm nodes, else wall time
    model: str | None = None         # the model that answered last (a fallback model after a fallback)
    calls: list[CallTrace] = field(default_factory=list)
    error_code: str | None = None
    error_message: str | None = None
    parent: str | None = None        # the enclosing container (or call node), None at top level
    branch: str | None = None
    iteration: int | None = None
    item: int | None = None
    input: Any = None
    wall_ms: float = 0.0
    error_location: str | None = None   # file:line of the user code that raised
    checks: list[CheckTrace] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)   # per kind: case taken, iterations, recovered items...

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd or 0.0 for c in self.calls)


@dataclass
class RunError(Exception):
    code: str
    message: str
    node: str | None = None
    location: str | None = None      # file:line in user code, when user code raised
    traceback: str | None = None     # the user's frames only
    causes: tuple["RunError", ...] = ()   # a join unmet because branches failed: their errors
    public: str | None = None        # the message without case data: shown on held-out runs too

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@overload
def root_cause(error: RunError) -> RunError: ...
@overload
def root_cause(error: None) -> None: ...
def root_cause(error: RunError | None) -> RunError | None:
    """A join unmet because its branches failed is what those failures are: a failure of the models when
    every branch failed on its answer (each draft failed its check), else the first infrastructure error
    among them (an outage makes the attempt unmeasured)."""
    if error is None or not error.causes:
        return error
    causes = [root_cause(c) for c in error.causes]
    infra = [c for c in causes if not codes.counted(codes.outcome_of(c.code))]
    cause = (infra or causes)[0]
    return RunError(cause.code, error.message, error.node, cause.location, cause.traceback, public=cause.public)


def models_failure(error: RunError) -> bool:
    """Is this what the model did (a counted outcome), which a container policy may absorb? Anything else
    (an outage, a missing key, a bug of the flow, a spend cut) is the attempt's, whatever the policy says."""
    return codes.counted(codes.outcome_of(root_cause(error).code))


@dataclass
class RunResult:
    output: Any = None
    error: RunError | None = None
    nodes: list[NodeTrace] = field(default_factory=list)
    latency_ms: float = 0.0
    wall_ms: float = 0.0

    @property
    def calls(self) -> list[CallTrace]:
        return [c for n in self.nodes for c in n.calls]

    @property
    def cost_usd(self) -> float:
        return sum(n.cost_usd for n in self.nodes)

    @property
    def unpriced_calls(self) -> int:
        return sum(1 for c in self.calls if c.cost_usd is None)

    @property
    def cost_bound_usd(self) -> float | None:
        """The most the attempt's calls could have cost (each's input as sent, its max_tokens of output);
        None when some call has no such bound."""
        bounds = [c.cost_bound_usd for c in self.calls]
        return None if any(b is None for b in bounds) else float(sum(b for b in bounds if b is not None))

    @property
    def tokens(self) -> tuple[int, int]:
        return sum(c.tokens_in for c in self.calls), sum(c.tokens_out for c in self.calls)

    @property
    def schema_valid_first_try(self) -> bool | None:
        """Did the first answer of every llm node validate without a repair? None without llm nodes."""
        firsts = [n.calls[0].schema_valid for n in self.nodes if n.calls]
        firsts = [f for f in firsts if f is not None]
        return all(firsts) if firsts else None

    @property
    def models(self) -> dict[str, str]:
        return {n.node: n.model for n in self.nodes if n.model}

    def to_dict(self) -> dict:
        return {
            "output": self.output,
            "error": None if self.error is None else {"code": self.error.code, "message": self.error.message,
                                                      "node": self.error.node, "location": self.error.location,
                                                      "traceback": self.error.traceback, "public": self.error.public},
            "latency_ms": self.latency_ms,
            "wall_ms": self.wall_ms,
            "nodes": [_node_dict(n) for n in self.nodes],
        }


def _node_dict(n: NodeTrace) -> dict:
    """asdict(n) without its deep copy of every value (the record is serialized, never mutated): it was a
    visible share of an attempt's cost."""
    d = dict(vars(n))
    d["calls"] = [dict(vars(c)) for c in n.calls]
    d["checks"] = [dict(vars(c)) for c in n.checks]
    return d
