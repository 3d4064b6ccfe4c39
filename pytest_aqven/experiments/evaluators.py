"""The evaluator contract shared by built-in and custom checks: fn(value, context, params) -> Verdict."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Generic, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field

I = TypeVar("I")
O = TypeVar("O")


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    passed: bool
    score: float | None = None
    reason: str | None = None


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class EvalContext(Generic[I, O]):
    inputs: I
    expected_output: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    attempt: int = 1
    cost_usd: float = 0.0
    latency_ms: int = 0


class ExpectedParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fields: list[str] | None = Field(default=None, min_length=1)


def _json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return json.loads(value.model_dump_json(by_alias=True))
    return value


def expected(value: Any, context: EvalContext, params: ExpectedParams) -> Verdict:
    want = _json(context.expected_output)
    got = _json(value)
    if want is None:
        return Verdict(passed=False, reason="there is no expected_output to compare with")
    if params.fields is not None:
        if not isinstance(want, dict):
            return Verdict(passed=False, reason=f"expected_output is not an object with the fields {', '.join(params.fields)}")
        absent = [f for f in params.fields if f not in want]
        if absent:
            return Verdict(passed=False, reason=f"expected_output lacks the fields {', '.join(absent)}")
    if not isinstance(want, dict):
        return Verdict(passed=got == want, reason=None if got == want else "the output differs from expected_output")
    got = got if isinstance(got, dict) else {}
    differ = [f for f in (params.fields or list(want)) if got.get(f) != want.get(f)]
    return Verdict(passed=not differ, reason=f"fields differ from expected_output: {', '.join(differ)}" if differ else None)


BUILTINS = {"expected": (expected, ExpectedParams)}
