"""The model-call contract every provider implements, and the one a function provider receives."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class AttemptIdentity:
    """Which attempt a call belongs to: keeps replayed repeats distinct samples."""
    experiment: str = ""
    variant: str = ""
    case: str = ""
    repeat: int = 0


@dataclass(frozen=True)
class Message:
    role: str                        # system | user | assistant
    content: str


@dataclass(frozen=True)
class ModelRequest:
    model: str                       # the model name, without the provider prefix
    messages: tuple[Message, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    output_mode: str = "auto"
    attempt: AttemptIdentity = AttemptIdentity()
    node: str = ""


@dataclass(frozen=True)
class ModelResponse:
    text: str | None = None
    parsed: Any = None               # an already parsed object (structured output)
    finish_reason: str = "stop"      # stop | length | refusal | error
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None    # as the provider reported it
    latency_ms: float | None = None
    refusal: str | None = None
    error: str | None = None

    @property
    def outcome(self) -> str:
        if self.error or self.finish_reason == "error":
            return "error"
        if self.refusal or self.finish_reason == "refusal":
            return "refusal"
        if self.finish_reason == "length":
            return "truncated"
        return "ok"


class ProviderError(Exception):
    """A call that failed for infrastructure reasons (an infra error of the attempt)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


class Provider(Protocol):
    def complete(self, request: ModelRequest) -> ModelResponse: ...
