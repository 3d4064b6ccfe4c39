"""What a run records: per node output, tokens, cost, latency, outcome, errors."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CallTrace:
    model: str
    outcome: str                     # ok | refusal | truncated | error
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None    # None: no source priced the call
    cost_source: str = "unknown"     # provider | prices | genai | unknown
    latency_ms: float = 0.0
    schema_valid: bool | None = None
    error: str | None = None


@dataclass
class NodeTrace:
    node: str
    kind: str
    status: str = "ok"               # ok | failed
    output: Any = None
    latency_ms: float = 0.0
    model: str | None = None
    calls: list[CallTrace] = field(default_factory=list)
    error_code: str | None = None
    error_message: str | None = None

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd or 0.0 for c in self.calls)


@dataclass
class RunError(Exception):
    code: str
    message: str
    node: str | None = None

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass
class RunResult:
    output: Any = None
    error: RunError | None = None
    nodes: list[NodeTrace] = field(default_factory=list)
    latency_ms: float = 0.0

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
                                                      "node": self.error.node},
            "latency_ms": self.latency_ms,
            "nodes": [asdict(n) for n in self.nodes],
        }
