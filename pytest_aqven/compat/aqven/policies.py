"""`aqven.policies`: the contracts of checks and of custom container policies (join, stop, select,
on_item_error). EvalContext, NoParams and Verdict are the classes pytest-aqven's engine uses."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Protocol, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field

from ...engine import refs
from ...experiments.evaluators import EvalContext, NoParams, Verdict

__all__ = ["POLICY_CONFIG", "BranchResult", "Continue", "Default", "Done", "EvalContext", "Evaluator", "Fail",
           "ItemDecision", "ItemErrorPolicy", "JoinDecision", "JoinPolicy", "JoinState", "LoopState", "NoParams",
           "RefPath", "SelectPolicy", "Skip", "Slot", "Stop", "StopDecision", "StopPolicy", "Verdict", "Wait"]

T = TypeVar("T")
O = TypeVar("O")
I = TypeVar("I")
P = TypeVar("P", bound=BaseModel)

POLICY_CONFIG = ConfigDict(extra="forbid", frozen=True)
RefPath = Annotated[str, Field(pattern=r"^\$")]


class Slot(str, enum.Enum):
    JOIN = "join"
    STOP = "stop"
    SELECT = "select"
    ITEM_ERROR = "on_item_error"
    EVALUATOR = "evaluator"


@dataclass(frozen=True)
class BranchResult(Generic[T]):
    key: str
    value: T | None = None
    error: str | None = None


@dataclass(frozen=True)
class JoinState(Generic[T]):
    """What a parallel node's join sees: the finished branches and the keys still running."""
    completed: tuple[BranchResult[T], ...]
    pending: tuple[str, ...]

    @property
    def values(self) -> tuple[T, ...]:
        return tuple(b.value for b in self.completed if b.value is not None)

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(b.error for b in self.completed if b.error is not None)


@dataclass(frozen=True)
class Wait:
    pass


@dataclass(frozen=True)
class Done(Generic[T]):
    value: tuple[T, ...]


@dataclass(frozen=True)
class Fail:
    reason: str


JoinDecision = Union[Wait, Done[T], Fail]


@dataclass(frozen=True)
class LoopState:
    """What a loop's stop and select policies see: the output documents of every pass so far."""
    iterations: tuple[Any, ...]

    def read(self, path: str, iteration: int = -1) -> Any:
        """The value at `path` ($iter.<node>.out...) in one pass (the last by default), or None."""
        if not self.iterations:
            return None
        try:
            root, steps = refs.lex(path)
        except refs.RefError:
            return None
        return refs.walk(self.iterations[iteration], steps) if root == "iter" else None


@dataclass(frozen=True)
class Continue:
    pass


@dataclass(frozen=True)
class Stop:
    reason: str


StopDecision = Union[Continue, Stop]


@dataclass(frozen=True)
class Skip:
    pass


@dataclass(frozen=True)
class Default(Generic[O]):
    value: O


ItemDecision = Union[Skip, Fail, Default[O]]


class JoinPolicy(Protocol[T, P]):
    def __call__(self, state: JoinState[T], params: P, /) -> JoinDecision[T]: ...


class StopPolicy(Protocol[P]):
    def __call__(self, state: LoopState, params: P, /) -> StopDecision: ...


class SelectPolicy(Protocol[P]):
    def __call__(self, state: LoopState, params: P, /) -> int: ...


class ItemErrorPolicy(Protocol[T, O, P]):
    def __call__(self, item: T, error: Any, params: P, /) -> ItemDecision[O]: ...


class Evaluator(Protocol[I, O, P]):
    def __call__(self, value: O, context: EvalContext[I, O], params: P, /) -> Verdict: ...
