"""The evaluator contract shared by built-in and custom checks: fn(value, context, params) -> Verdict,
and AQVEN's eleven built-in evaluators (`use:` with `with:` parameters)."""
from __future__ import annotations

import json
import math
import os
import re
import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Literal, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ..engine import refs

I = TypeVar("I")
O = TypeVar("O")


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    passed: bool
    score: float | None = None
    reason: str | None = None

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if self.score is not None and not math.isfinite(self.score):     # a check's bug: where it was made
            caller = sys._getframe(1)
            _MADE_AT[id(self)] = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
            weakref.finalize(self, _MADE_AT.pop, id(self), None)


_MADE_AT: dict[int, str] = {}       # id of a live Verdict whose score is not finite -> where it was built


def made_at(verdict: Verdict) -> str | None:
    """file:line of the user's code that built `verdict` with a score that is not a finite number."""
    return _MADE_AT.get(id(verdict))


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class EvalContext(Generic[I, O]):
    inputs: I
    expected_output: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    attempt: int = 1
    cost_usd: float | None = 0.0     # None: a call had no known price (the cost is unknown)
    latency_ms: int = 0


# --- parameters -------------------------------------------------------------------------------

PathRef = Annotated[str, Field(pattern=r"^\$(in|out)(\.|\[|$)")]     # $out.reply.text, $in.chunks[*].id
Member = Annotated[str, Field(min_length=1)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExpectedParams(_Params):
    fields: Annotated[list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,62}$")]], Field(min_length=1)] | None = None


class FieldParams(_Params):
    field: PathRef


class MaxWordsParams(_Params):
    field: PathRef
    max: int = Field(ge=1)


class LanguageParams(_Params):
    field: PathRef
    locale: PathRef


class NoPiiParams(_Params):
    fields: Annotated[list[PathRef], Field(min_length=1)]
    detectors: list[Literal["email", "phone", "card_number", "iban", "ip_address"]] | None = None


class RegexParams(_Params):
    field: PathRef
    pattern: Annotated[str, Field(min_length=1)]


class UniqueItemsParams(_Params):
    field: PathRef
    key: str


class IdsInAllowedSetParams(_Params):
    field: PathRef
    allowed: PathRef


class CitationsParams(_Params):
    citations: PathRef
    sources: PathRef
    id: Member
    quote: Member
    text: Member


# --- helpers ----------------------------------------------------------------------------------

def _json(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return json.loads(value.model_dump_json(by_alias=True))
    return value


def read(path: str, value: Any, context: EvalContext) -> Any:
    """A RefPath against $out (the value) and $in (the inputs); a missing step yields None."""
    ref = refs.parse(path)
    return refs.walk(_json(value) if ref.root == "out" else _json(context.inputs), ref.steps)


def text(x: Any) -> str:
    return x if isinstance(x, str) else ""


def items(x: Any) -> list:
    return x if isinstance(x, list) else []


def member(x: Any, key: str) -> Any:
    return x.get(key) if isinstance(x, dict) else None


# --- the built-ins ----------------------------------------------------------------------------

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


def not_empty(value: Any, context: EvalContext, params: FieldParams) -> Verdict:
    x = read(params.field, value, context)
    passed = bool(x.strip()) if isinstance(x, str) else bool(x)
    return Verdict(passed=passed, reason=None if passed else f"{params.field} is empty")


def max_words(value: Any, context: EvalContext, params: MaxWordsParams) -> Verdict:
    count = len(text(read(params.field, value, context)).split())
    passed = count <= params.max
    return Verdict(passed=passed, reason=None if passed else f"{params.field}: {count} words, at most {params.max} allowed")


_LETTER = re.compile(r"[^\W\d_]")
_SCRIPTS = {
    **dict.fromkeys(("ru", "uk", "be", "kk"), re.compile(r"[\u0400-\u04ff]")),
    **dict.fromkeys(("en", "de", "fr", "es", "it", "pt", "pl"), re.compile(r"[a-zA-Z\u00c0-\u024f]")),
}


def language(value: Any, context: EvalContext, params: LanguageParams) -> Verdict:
    letters = _LETTER.findall(text(read(params.field, value, context)))
    code = text(read(params.locale, value, context)).split("-")[0].lower()
    script = _SCRIPTS.get(code)
    if script is None or not letters:
        return Verdict(passed=True, reason=f"language {code or '—'} is not supported by this check")
    share = sum(1 for ch in letters if script.match(ch)) / len(letters)
    passed = share >= 0.6
    return Verdict(passed=passed, reason=None if passed else
                   f"{params.field} is not in language {code}: alphabet letter share {share:.2f}")


_PII = {
    "email": re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+"),
    "phone": re.compile(r"\+?\d[\d\s()-]{8,}\d"),
    "card_number": re.compile(r"\b(?:\d[ -]?){13,19}\b"),
    "iban": re.compile(r"\b[A-Z]{2}\d{2}[A-Z0-9]{11,30}\b"),
    "ip_address": re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"),
}


def no_pii(value: Any, context: EvalContext, params: NoPiiParams) -> Verdict:
    detectors: Sequence[str] = params.detectors or list(_PII)
    found = sorted({name for f in params.fields for name in detectors
                    if _PII[name].search(text(read(f, value, context)))})
    return Verdict(passed=not found, reason=f"personal data found: {', '.join(found)}" if found else None)


def regex(value: Any, context: EvalContext, params: RegexParams) -> Verdict:
    passed = re.search(params.pattern, text(read(params.field, value, context))) is not None
    return Verdict(passed=passed, reason=None if passed else f"{params.field} does not match {params.pattern}")


def unique_items(value: Any, context: EvalContext, params: UniqueItemsParams) -> Verdict:
    keys = [json.dumps(member(item, params.key), sort_keys=True) for item in items(read(params.field, value, context))]
    passed = len(keys) == len(set(keys))
    return Verdict(passed=passed, reason=None if passed else f"{params.field}: key {params.key} is duplicated")


def ids_in_allowed_set(value: Any, context: EvalContext, params: IdsInAllowedSetParams) -> Verdict:
    found = read(params.field, value, context)
    found = found if isinstance(found, list) else [found]
    allowed = items(read(params.allowed, value, context))
    outside = [item for item in found if item not in allowed]
    return Verdict(passed=not outside, reason=f"{params.field}: values outside the allowed set: "
                   f"{', '.join(map(str, outside))}" if outside else None)


def citations_in_sources(value: Any, context: EvalContext, params: CitationsParams) -> Verdict:
    sources = {text(member(s, params.id)): text(member(s, params.text)) for s in items(read(params.sources, value, context))}
    missing = [str(member(c, params.id)) for c in items(read(params.citations, value, context))
               if member(c, params.id) not in sources or text(member(c, params.quote)) not in sources[member(c, params.id)]]
    return Verdict(passed=not missing, reason=f"quotes not found in sources: {', '.join(missing)}" if missing else None)


def cost_usd(value: Any, context: EvalContext, params: NoParams) -> Verdict:
    return Verdict(passed=True, score=context.cost_usd,
                   reason=None if context.cost_usd is not None else "the cost is unknown: a call had no known price")


def latency_ms(value: Any, context: EvalContext, params: NoParams) -> Verdict:
    return Verdict(passed=True, score=float(context.latency_ms))


BUILTINS: dict[str, tuple[Callable[..., Any], type[BaseModel]]] = {
    "expected": (expected, ExpectedParams),
    "not_empty": (not_empty, FieldParams),
    "max_words": (max_words, MaxWordsParams),
    "language": (language, LanguageParams),
    "no_pii": (no_pii, NoPiiParams),
    "regex": (regex, RegexParams),
    "unique_items": (unique_items, UniqueItemsParams),
    "ids_in_allowed_set": (ids_in_allowed_set, IdsInAllowedSetParams),
    "citations_in_sources": (citations_in_sources, CitationsParams),
    "cost_usd": (cost_usd, NoParams),
    "latency_ms": (latency_ms, NoParams),
}
# run on the event loop, not in a thread: ours, pure, linear in the value; `regex` is left out because its
# pattern is the user's and can backtrack for as long as it likes (the thread keeps its time limit)
INLINE = frozenset(BUILTINS) - {"regex"}
