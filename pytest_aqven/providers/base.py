"""The model-call contract every provider implements, and the one a function provider receives."""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from .secrets import scrub


@dataclass(frozen=True)
class AttemptIdentity:
    """Which attempt a call belongs to: keeps replayed repeats distinct samples."""
    experiment: str = ""
    variant: str = ""
    case: str = ""
    repeat: int = 0


@dataclass(frozen=True)
class Part:
    """One piece of a message's content: text, or a media file of the case (image, audio, video, document)."""
    kind: str                        # text | image | audio | video | document
    text: str | None = None          # kind text
    media_type: str | None = None    # e.g. image/png
    data: bytes | None = None        # the file's bytes (a provider encodes them as it needs)
    name: str | None = None          # the file name, for documents


@dataclass(frozen=True)
class ToolDef:
    """A tool the model may call; `parameters` is the JSON schema of its arguments."""
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    role: str                        # system | user | assistant | tool
    content: str | tuple[Part, ...]  # text, or parts when a message carries media
    tool_calls: tuple[ToolCall, ...] = ()   # assistant: the calls it asked for
    tool_call_id: str | None = None         # tool: which call this message answers

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text or "" for p in self.content if p.kind == "text")


@dataclass(frozen=True)
class ModelRequest:
    model: str                       # the model name, without the provider prefix
    messages: tuple[Message, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    output_mode: str = "auto"        # resolved by the engine: native | tool | prompted (see OUTPUT_TOOL)
    attempt: AttemptIdentity = AttemptIdentity()
    node: str = ""
    tools: tuple[ToolDef, ...] = ()  # the agent's tools (and, in tool mode, the output tool OUTPUT_TOOL)
    strict: bool = True              # ask for constrained decoding of the output schema


# How many model calls this process may have in flight at once: an HTTP provider sizes its connection
# pool by it (the attempt scheduler sets it from --aqven-concurrency).
CALLS_IN_FLIGHT: ContextVar[int] = ContextVar("aqven_calls_in_flight", default=100)

# In output mode `tool` the answer is a call of this tool whose arguments are the output object.
OUTPUT_TOOL = "final_result"


@dataclass(frozen=True)
class ModelResponse:
    text: str | None = None
    parsed: Any = None               # an already parsed object (structured output)
    finish_reason: str = "stop"      # stop | length | refusal | error | tool_calls
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None    # None: unknown (no source priced the call), never free
    latency_ms: float | None = None
    refusal: str | None = None
    error: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()   # finish_reason tool_calls: the tools the model asks to run
    cost_source: str | None = None   # provider | openrouter | genai_prices | unknown; None: "provider" if cost_usd
    retries: tuple[tuple[str, float], ...] = ()   # transport retries before this answer: (cause, wait in s)
    # the most the call could have cost: its input as sent and the request's max_tokens of output at the model's
    # price; None when either is unknown (statistics bound cost_usd with it: SeriesFacts.cost_bound)
    cost_bound_usd: float | None = None

    @property
    def outcome(self) -> str:
        if self.error or self.finish_reason == "error":
            return "error"
        if self.refusal or self.finish_reason == "refusal":
            return "refusal"
        if self.finish_reason == "length":
            return "truncated"
        return "ok"


def max_output_tokens(request: ModelRequest) -> int | None:
    """The request's max_tokens setting, when it has one."""
    value = request.settings.get("max_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class ProviderError(Exception):
    """A call that failed for infrastructure reasons (an infra error of the attempt).

    `fix`: set on a permanent error, one every call of this provider and model repeats until a person changes
    the configuration (no key, HTTP 401/403, an unknown model or route (404), a connection refused): what
    that person does. The series stops at the first one (series/scheduler.py)."""

    def __init__(self, code: str, message: str, retries: tuple[tuple[str, float], ...] = (),
                 public: str | None = None, fix: str | None = None) -> None:
        super().__init__(scrub(message))    # provider text may echo a key: scrubbed where it is created
        self.code = code
        self.retries = retries          # transport retries before giving up: (cause, wait in s)
        # the message without case data (no body, no exception text): shown on held-out runs too
        self.public = None if public is None else scrub(public)
        self.fix = fix


class Provider(Protocol):
    async def complete(self, request: ModelRequest) -> ModelResponse: ...
