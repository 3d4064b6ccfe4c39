"""`aqven.policies.contracts`: what user policies and evaluators receive and return. The states and
decisions are the engine's own classes (engine/policies.py), EvalContext, NoParams and Verdict those it
scores checks with (engine/evaluators.py)."""
from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Protocol, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field

from ....engine.policies import (BranchResult, Continue, Default, Done, Fail, JoinState, LoopState, Skip, Stop,
                                 Wait)
from ....engine.evaluators import EvalContext, NoParams, Verdict
from ....project.builtin_types import MapItemError

T = TypeVar("T")
O = TypeVar("O")
I = TypeVar("I")
P = TypeVar("P", bound=BaseModel)

POLICY_CONFIG = ConfigDict(extra="forbid", frozen=True)
RefPath = Annotated[str, Field(pattern=r"^\$")]


class Slot(StrEnum):
    JOIN = "join"
    STOP = "stop"
    SELECT = "select"
    ITEM_ERROR = "on_item_error"
    EVALUATOR = "evaluator"


JoinDecision = Union[Wait, Done[T], Fail]
StopDecision = Union[Continue, Stop]
ItemDecision = Union[Skip, Fail, Default[O]]


class JoinPolicy(Protocol[T, P]):
    def __call__(self, state: JoinState[T], params: P, /) -> JoinDecision[T]: ...


class StopPolicy(Protocol[P]):
    def __call__(self, state: LoopState, params: P, /) -> StopDecision: ...


class SelectPolicy(Protocol[P]):
    def __call__(self, state: LoopState, params: P, /) -> int: ...


class ItemErrorPolicy(Protocol[T, O, P]):
    def __call__(self, item: T, error: MapItemError, params: P, /) -> ItemDecision[O]: ...


class Evaluator(Protocol[I, O, P]):
    def __call__(self, value: O, context: EvalContext[I, O], params: P, /) -> Verdict: ...


__all__ = ["POLICY_CONFIG", "BranchResult", "Continue", "Default", "Done", "EvalContext", "Evaluator", "Fail",
           "ItemDecision", "ItemErrorPolicy", "JoinDecision", "JoinPolicy", "JoinState", "LoopState", "NoParams",
           "RefPath", "SelectPolicy", "Skip", "Slot", "Stop", "StopDecision", "StopPolicy", "Verdict", "Wait"]
