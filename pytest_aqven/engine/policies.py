"""Container policies: parallel joins, map item errors, loop stop and select; built-in or the user's `run:`.

The decision objects follow AQVEN's contracts (aqven.policies): a join returns Wait / Done(values) /
Fail(reason), a stop rule Continue / Stop(reason), a select rule an iteration index, an item-error rule
Skip / Fail(reason) / Default(value). A user policy may return objects of any class with these names
(AQVEN's own when its engine package is installed; otherwise `aqven.policies` is these classes): they are
read by name and attributes.

Values cross into a user's policy as its annotations say, as in AQVEN: a join typed
`JoinState[JudgeVerdict]` sees the branches' outputs as JudgeVerdict models, an item-error rule typed
`item: Ticket` a Ticket; what it returns (Done's values, Default's value) goes back to JSON. Loop state
is the JSON of each pass, as AQVEN gives it."""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, Self, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError, model_validator
from pydantic_core import to_jsonable_python

from ..project.builtin_types import MapItemError
from . import refs

if TYPE_CHECKING:
    pass

# --- decisions and states (AQVEN's shapes; generic, so user code may write JoinState[Draft]) ------
T = TypeVar("T")
O = TypeVar("O")


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
        """The outputs of the branches that succeeded (a branch may succeed with an empty output)."""
        # a branch without an error holds its output, a T (which may itself admit None)
        return tuple(cast(T, b.value) for b in self.completed if b.error is None)

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


@dataclass(frozen=True)
class Continue:
    pass


@dataclass(frozen=True)
class Stop:
    reason: str


@dataclass(frozen=True)
class Skip:
    pass


@dataclass(frozen=True)
class Default(Generic[O]):
    value: O


@dataclass(frozen=True)
class LoopState:
    """What a loop's stop and select policies see: the output documents of every pass so far."""
    iterations: tuple[dict, ...]     # per pass: {child id: {"out": output}}

    def read(self, path: str, iteration: int = -1) -> Any:
        """The value at `path` ($iter.<node>.out...) in one pass (the last by default), or None."""
        if not self.iterations:
            return None
        try:
            root, steps = refs.lex(path)
        except refs.RefError:
            return None
        return refs.walk(self.iterations[iteration], steps) if root == "iter" else None


# --- parameters -----------------------------------------------------------------------------
class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoParams(Params):
    pass


class QuorumParams(Params):
    min_ok: int = Field(ge=1)
    on_error: Literal["skip", "fail"] = "fail"


class ThresholdParams(Params):
    path: str = Field(pattern=r"^\$")
    gte: float | None = None
    lte: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Self:
        if (self.gte is None) == (self.lte is None):
            raise ValueError("a threshold sets exactly one of gte or lte")
        return self


class StagnationParams(Params):
    path: str = Field(pattern=r"^\$")
    window: int = Field(default=1, ge=1, le=5)
    min_delta: float = Field(default=0.0, ge=0)


class BestParams(Params):
    path: str = Field(pattern=r"^\$")


class DefaultParams(Params):
    value: Any


# --- built-ins ------------------------------------------------------------------------------
def join_all(state: JoinState, params: NoParams) -> Wait | Done[Any] | Fail:
    if state.errors:
        return Fail(state.errors[0])
    return Wait() if state.pending else Done(state.values)


def join_any(state: JoinState, params: NoParams) -> Wait | Done[Any] | Fail:
    if state.errors:
        return Fail(state.errors[0])
    return Done(state.values[:1]) if state.values else Wait()


def first_success(state: JoinState, params: NoParams) -> Wait | Done[Any] | Fail:
    if state.values:
        return Done(state.values[:1])
    return Wait() if state.pending else Fail("all branches failed")


def quorum(state: JoinState, params: QuorumParams) -> Wait | Done[Any] | Fail:
    if params.on_error == "fail" and state.errors:
        return Fail(state.errors[0])
    if len(state.values) >= params.min_ok and not state.pending:
        return Done(state.values)
    if len(state.values) + len(state.pending) < params.min_ok:
        return Fail(f"quorum {params.min_ok} is unreachable: {len(state.errors)} branches failed "
                    f"({'; '.join(state.errors)})")
    return Wait()


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def scores(state: LoopState, path: str) -> list[float | None]:
    return [number(state.read(path, i)) for i in range(len(state.iterations))]


def threshold(state: LoopState, params: ThresholdParams) -> Continue | Stop:
    value = scores(state, params.path)[-1] if state.iterations else None
    hit = value is not None and ((params.gte is not None and value >= params.gte)
                                 or (params.lte is not None and value <= params.lte))
    return Stop(f"threshold reached: {params.path} = {value}") if hit else Continue()


def stagnation(state: LoopState, params: StagnationParams) -> Continue | Stop:
    known = [v for v in scores(state, params.path) if v is not None]
    if len(known) <= params.window:
        return Continue()
    gain = known[-1] - known[-1 - params.window]
    if gain < params.min_delta:
        return Stop(f"{params.path} gained {gain:g} over {params.window} iterations, less than {params.min_delta:g}")
    return Continue()


def last(state: LoopState, params: NoParams) -> int:
    return max(len(state.iterations) - 1, 0)


def best(state: LoopState, params: BestParams) -> int:
    ranked = scores(state, params.path)
    return max(range(len(ranked)), key=lambda i: (ranked[i] is not None, ranked[i] or 0.0), default=0)


def skip(item: Any, error: MapItemError, params: NoParams) -> Skip:
    return Skip()


def fail(item: Any, error: MapItemError, params: NoParams) -> Fail:
    return Fail(error.message)


def default(item: Any, error: MapItemError, params: DefaultParams) -> Default[Any]:
    return Default(params.value)


BUILTINS: dict[str, dict[str, tuple[Callable, type[Params]]]] = {
    "join": {"all": (join_all, NoParams), "any": (join_any, NoParams), "first_success": (first_success, NoParams),
             "quorum": (quorum, QuorumParams)},
    "stop": {"threshold": (threshold, ThresholdParams), "stagnation": (stagnation, StagnationParams)},
    "select": {"last": (last, NoParams), "best": (best, BestParams)},
    "on_item_error": {"skip": (skip, NoParams), "fail": (fail, NoParams), "default": (default, DefaultParams)},
}


class PolicyError(ValueError):
    def __init__(self, message: str, loc: tuple = ()) -> None:
        super().__init__(message)
        self.loc = loc              # where in `with` the first problem is (the checker points there)


def to_json(value: Any) -> Any:
    """A policy's answer (models, dataclasses, tuples) as the engine's JSON values."""
    return to_jsonable_python(value, by_alias=True)


@dataclass(frozen=True)
class Codec:
    """How a value crosses into user code: validated into the annotation it is typed with."""
    annotation: Any = None
    adapter: TypeAdapter | None = None       # None: the JSON value as it is (untyped, a TypeVar, Any)

    def decode(self, value: Any) -> Any:
        return value if self.adapter is None or value is None else self.adapter.validate_python(value)

    @property
    def label(self) -> str:
        return getattr(self.annotation, "__name__", None) or str(self.annotation).replace("typing.", "")


JSON_CODEC = Codec()
_PASS_THROUGH = (Any, object, JsonValue, BaseModel, None)


def codec_for(annotation: Any) -> Codec:
    if annotation is None or isinstance(annotation, TypeVar) or any(annotation is t for t in _PASS_THROUGH):
        return JSON_CODEC
    try:
        return Codec(annotation, TypeAdapter(annotation))
    except Exception:           # noqa: BLE001 - an annotation pydantic cannot validate: the JSON value
        return JSON_CODEC


@dataclass
class Policy:
    slot: str                        # join | stop | select | on_item_error
    label: str
    fn: Callable
    params: Any
    builtin: bool = field(default=True)
    values: Codec = JSON_CODEC       # join: each branch's output; on_item_error: the item


def load(slot: str, ref, resolve_code: Callable[[str], Callable]) -> Policy:
    """A PolicyRef ({use|run, with}) of one slot -> the function and its validated parameters."""
    model: type[BaseModel] | None
    if ref.use is not None:
        found = BUILTINS[slot].get(ref.use)
        if found is None:
            raise PolicyError(f"{slot} policy {ref.use} is not a built-in ({', '.join(BUILTINS[slot])})")
        fn, model, label, builtin = *found, f"use: {ref.use}", True
    else:
        fn, label, builtin = resolve_code(ref.run), ref.run, False
        names, hints = _signature(fn, label)
        model = hints.get(names[-1])
        model = model if isinstance(model, type) and issubclass(model, BaseModel) else None
        values = _values_codec(slot, hints.get(names[0]))
    try:
        params = model.model_validate(ref.with_ or {}) if model is not None else None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'with'}: {e['msg']}" for e in exc.errors())
        raise PolicyError(f"{slot} policy {label}: with parameters are invalid: {problems}",
                          tuple(exc.errors()[0]["loc"])) from None
    policy = Policy(slot, label, fn, params if params is not None else dict(ref.with_ or {}), builtin)
    if not builtin:
        policy.values = values
    return policy


def _signature(fn: Callable, label: str) -> tuple[list[str], dict[str, Any]]:
    """The parameter names and resolved hints of a user's policy (hints it cannot resolve: none)."""
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return ["state", "params"], {}
    if not names:
        raise PolicyError(f"policy {label} takes no parameters; it needs (state, params)")
    try:
        hints = typing.get_type_hints(fn)
    except Exception:   # noqa: BLE001 - a hint naming what does not exist: the values stay JSON
        hints = {}
    return names, hints


def _values_codec(slot: str, first: Any) -> Codec:
    """A join typed JoinState[X] takes the branches' outputs as X; an item-error rule takes the item as
    its first parameter's annotation. Stop and select rules read the JSON of each pass (LoopState)."""
    if slot == "join":
        args = typing.get_args(first)
        return codec_for(args[0] if args else None)
    if slot == "on_item_error":
        return codec_for(first)
    return JSON_CODEC


def absorbs_errors(policy: Policy) -> bool:
    """May the policy carry on past a failed branch or item? The built-ins that fail on the first error do
    not; a user's policy may."""
    if not policy.builtin:
        return True
    if policy.fn is quorum:
        return policy.params.on_error == "skip"
    return policy.fn in (first_success, skip, default)


def kind_of(decision: Any) -> str:
    """The decision's class name (Wait, Done, Fail, Continue, Stop, Skip, Default), whoever defined it."""
    return type(decision).__name__
