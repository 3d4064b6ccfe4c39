"""Checks of an experiment by evaluator (a built-in `use:` or a `run:` function): compiled once, scored on every
attempt. A judge check is compiled by experiments/judges.py (experiments/checks.py picks which)."""
from __future__ import annotations

import dataclasses
import inspect
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError

from ..project import coderefs, usercode
from ..project.model import Experiment, Project
from ..project.specs import ExperimentCheck
from . import fit
from .evaluators import BUILTINS, INLINE, EvalContext, NoParams, Verdict, made_at


class CheckInvalid(ValueError):
    pass


@dataclass(frozen=True)
class CheckResult:
    state: str                 # passed | failed | error | skipped
    value: float | None = None
    reason: str | None = None


@dataclass
class CompiledCheck:
    spec: ExperimentCheck
    fn: Callable[..., Any]
    params: BaseModel
    label: str
    models: tuple[Any, Any, Any] = (None, None, None)    # value, context inputs, expected output: user hints
    inline: bool = False       # a built-in that needs no thread (ours, no user code, linear in the value)
    required: tuple[tuple[str, str], ...] = ()           # (context slot, its hint) of each typed not optional

    def typed(self, value: Any, context: EvalContext) -> tuple[Any, EvalContext]:
        """User code runs unchanged: a check typed `value: <Out>, context: EvalContext[<In>, <Out>]` gets
        models, not dicts (a value that does not fit its hint is passed as it is)."""
        value_model, in_model, out_model = self.models
        if value_model is None and in_model is None:
            return value, context
        return (_as(value_model, value),
                dataclasses.replace(context, inputs=_as(in_model, context.inputs),
                                    expected_output=_as(out_model, context.expected_output)))

    @property
    def id(self) -> str:
        return self.spec.id

    def guard(self, context: EvalContext) -> EvalContext:
        """A context slot typed not optional that is null (a case without expected_output for a check typed
        EvalContext[In, Out]) is the check's infrastructure error CHECK_INPUT_MISSING when the function reads it,
        never a score; the many checks typed so that never read it run as before."""
        missing = {slot: f"check {self.id}: evaluator {self.label} types context.{slot} as {hint}, which is not "
                         f"optional, but the case's {slot} is null or missing"
                   for slot, hint in self.required if getattr(context, slot) is None}
        return _Guarded(**{f.name: getattr(context, f.name) for f in dataclasses.fields(context)},
                        missing=missing) if missing else context

    async def score(self, value: Any, context: EvalContext, timeout: float | None = usercode.DEFAULT_TIMEOUT
                    ) -> CheckResult:
        """In a worker thread (awaited when async), with a time limit: a check is user code. A built-in that
        is ours through and through runs on the loop: handing it to a thread cost more than the check."""
        try:
            value, context = self.typed(value, context)
            context = self.guard(context)
            if self.inline:
                try:
                    verdict = self.fn(value, context, self.params)
                except Exception as exc:  # noqa: BLE001 - reported as a thread's exception would be
                    raise usercode.user_error(exc) from None
            else:
                verdict = await usercode.call(self.fn, value, context, self.params, timeout=timeout)
        except usercode.UserCallTimeout as exc:
            message = f"check {self.id}: evaluator {self.label} {exc}"
            raise CheckRaised(message, "timeout", message) from None
        except usercode.UserCodeError as exc:  # a bug in a check is an infrastructure error of the attempt
            if isinstance(exc.original, _Missing):
                message = f"{exc.original} (read at {exc.location})" if exc.location else str(exc.original)
                raise CheckRaised(message, "CHECK_INPUT_MISSING", message) from None
            public = f"check {self.id}: evaluator {self.label} raised {exc.exc_type}" + (
                f" at {exc.location}" if exc.location else "")
            raise CheckRaised(f"check {self.id}: evaluator {self.label} raised {exc}", public=public) from None
        return self.interpret(verdict)

    def interpret(self, verdict: Any) -> CheckResult:
        if not isinstance(verdict, Verdict):
            message = f"check {self.id}: evaluator {self.label} did not return a Verdict"
            raise CheckRaised(message, public=message)
        if verdict.score is not None and not math.isfinite(verdict.score):
            # a NaN would pass or leave the metric silently: the check's own bug, an infrastructure error
            where = None if self.spec.use else made_at(verdict) or fit.returned_at(self.fn)
            message = (f"check {self.id}: evaluator {self.label} gave the score {verdict.score}, not a finite number"
                       + (f" (at {where})" if where else ""))
            raise CheckRaised(message, "CHECK_VALUE_INVALID", message)
        if not isinstance(verdict.passed, bool):
            # bool(nan) is True: a passed that is not a boolean would pass silently (a Verdict built unvalidated)
            message = f"check {self.id}: evaluator {self.label} gave passed {verdict.passed!r}, not a boolean"
            raise CheckRaised(message, "CHECK_VALUE_INVALID", message)
        if self.spec.kind == "binary":
            return CheckResult("passed" if verdict.passed else "failed", 1.0 if verdict.passed else 0.0, verdict.reason)
        if verdict.score is None:   # no value to measure (a cost check on calls of unknown price): left out of it
            return CheckResult("error", None, f"evaluator returned no score for a {self.spec.kind} check")
        return CheckResult("passed", float(verdict.score), verdict.reason)


class AnyRecord(BaseModel):
    """What a check typed with the bare BaseModel gets for a record: every field kept, read as an attribute."""
    model_config = ConfigDict(extra="allow")


def _as(model: Any, value: Any) -> Any:
    if model is None or value is None or not isinstance(value, dict):
        return value
    try:
        return model.model_validate(value)
    except ValidationError:
        return value


class _Missing(Exception):
    """Raised in the check function when it reads a context slot that is null but typed not optional."""


@dataclass(frozen=True)
class _Guarded(EvalContext):
    missing: dict[str, str] = dataclasses.field(default_factory=dict)      # slot -> why it must not be read

    def __getattribute__(self, name: str) -> Any:
        why = object.__getattribute__(self, "missing").get(name) if name in _SLOTS else None
        if why is not None:
            raise _Missing(why)
        return object.__getattribute__(self, name)


_SLOTS = ("inputs", "expected_output")


def _admits_null(hint: Any) -> bool:
    if hint in (None, Any, object, type(None)) or isinstance(hint, typing.TypeVar):
        return True
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def required_slots(fn: Callable) -> tuple[tuple[str, str], ...]:
    """The context slots (inputs, expected_output) a check function types EvalContext[In, Out] with a type that
    does not admit null, each with its hint's name."""
    try:
        hints = typing.get_type_hints(fn)
        names = list(inspect.signature(fn).parameters)
    except Exception:
        return ()
    args = typing.get_args(hints.get(names[1])) if len(names) > 1 else ()
    return tuple((slot, getattr(hint, "__name__", str(hint))) for slot, hint in zip(_SLOTS, args)
                 if len(args) == 2 and not _admits_null(hint))


def user_models(fn: Callable) -> tuple[Any, Any, Any]:
    """The model classes a check function's hints name for value and EvalContext[In, Out], or None each."""
    try:
        hints = typing.get_type_hints(fn)
        names = list(inspect.signature(fn).parameters)
    except Exception:
        return None, None, None

    def model(t: Any) -> Any:
        if t is BaseModel:      # AQVEN's `value: BaseModel`: any model, so the record as it is, fields as attributes
            return AnyRecord
        return t if isinstance(t, type) and issubclass(t, BaseModel) else None

    args = typing.get_args(hints.get(names[1])) if len(names) > 1 else ()
    return (model(hints.get(names[0])) if names else None, model(args[0]) if len(args) == 2 else None,
            model(args[1]) if len(args) == 2 else None)


class CheckRaised(RuntimeError):
    def __init__(self, message: str, code: str = "E_POLICY_RAISED", public: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.public = public        # the message without case data: held-out reports show it
        self.run: Any = None        # a judge's own run (engine.trace.RunResult), kept with the attempt's trace


def params_model(fn: Callable, label: str) -> type[BaseModel]:
    try:
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
    except (TypeError, ValueError, NameError) as exc:
        raise CheckInvalid(f"evaluator {label}: cannot read its signature: {exc}") from None
    params = list(sig.parameters.values())
    if len(params) != 3:
        raise CheckInvalid(f"evaluator {label}: takes (value, context, params), not {len(params)} parameters")
    model = hints.get(params[-1].name)
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise CheckInvalid(f"evaluator {label}: the last parameter is not a parameters model")
    return model


def compile_check(spec: ExperimentCheck, project: Project, experiment: Experiment) -> CompiledCheck:
    """An evaluator check: `use:` or `run:` is set."""
    if spec.use is not None:
        if spec.use not in BUILTINS:
            raise CheckInvalid(f"check {spec.id}: use: {spec.use} is not a built-in evaluator "
                               f"(built-ins: {', '.join(sorted(BUILTINS))})")
        fn, model = BUILTINS[spec.use]
        label = f"use: {spec.use}"
        models = (None, None, None)
        required: tuple[tuple[str, str], ...] = ()
        inline = spec.use in INLINE
    else:
        run = typing.cast(str, spec.run)        # an evaluator check sets use or run
        try:
            fn = coderefs.resolve(run, package=project.package, root=project.root,
                                  here=experiment.folder / "checks.py")
        except coderefs.CodeRefError as exc:
            raise CheckInvalid(f"check {spec.id}: evaluator {exc}") from None
        label = run
        model = params_model(fn, label)
        models = user_models(fn)
        required = required_slots(fn)
        inline = False
    try:
        params = model.model_validate(spec.with_ or {})
    except ValidationError as exc:
        raise CheckInvalid(f"evaluator {label}: with parameters are invalid: "
                           + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    return CompiledCheck(spec, fn, params, label, models, inline, required)


__all__ = ["CheckInvalid", "CheckRaised", "CheckResult", "CompiledCheck", "compile_check", "NoParams"]
