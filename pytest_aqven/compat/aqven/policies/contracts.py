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
T_contra = TypeVar("T_contra", contravariant=True)
O = TypeVar("O")
I = TypeVar("I")
P_contra = TypeVar("P_contra", bound=BaseModel, contravariant=True)    # params: a policy's argument

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


class JoinPolicy(Protocol[T, P_contra]):
    def __call__(self, state: JoinState[T], params: P_contra, /) -> JoinDecision[T]: ...


class StopPolicy(Protocol[P_contra]):
    def __call__(self, state: LoopState, params: P_contra, /) -> StopDecision: ...


class SelectPolicy(Protocol[P_contra]):
    def __call__(self, state: LoopState, params: P_contra, /) -> int: ...


class ItemErrorPolicy(Protocol[T_contra, O, P_contra]):
    def __call__(self, item: T_contra, error: MapItemError, params: P_contra, /) -> ItemDecision[O]: ...


class Evaluator(Protocol[I, O, P_contra]):
    def __call__(self, value: O, context: EvalContext[I, O], params: P_contra, /) -> Verdict: ...


__all__ = ["POLICY_CONFIG", "BranchResult", "Continue", "Default", "Done", "EvalContext", "Evaluator", "Fail",
           "ItemDecision", "ItemErrorPolicy", "JoinDecision", "JoinPolicy", "JoinState", "LoopState", "NoParams",
           "RefPath", "SelectPolicy", "Skip", "Slot", "Stop", "StopDecision", "StopPolicy", "Verdict", "Wait"]
