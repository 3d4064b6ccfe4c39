"""What the checker knows of the built-ins: the `with:` models of AQVEN's eleven built-in evaluators
and the names of the built-in container policies. The runtime's own models win where it has them
(experiments.evaluators.BUILTINS), so the checker and the runner never disagree on those."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..experiments.evaluators import BUILTINS as RUNTIME_BUILTINS
from ..experiments.evaluators import NoParams

Path = Annotated[str, Field(pattern=r"^\$")]          # a RefPath such as $out.reply.text
Member = Annotated[str, Field(min_length=1)]


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FieldParams(_Params):
    field: Path


class MaxWordsParams(_Params):
    field: Path
    max: int = Field(ge=1)


class LanguageParams(_Params):
    field: Path
    locale: Path


class NoPiiParams(_Params):
    fields: Annotated[list[Path], Field(min_length=1)]
    detectors: list[Literal["email", "phone", "card_number", "iban", "ip_address"]] | None = None


class RegexParams(_Params):
    field: Path
    pattern: Annotated[str, Field(min_length=1)]


class UniqueItemsParams(_Params):
    field: Path
    key: str


class IdsInAllowedSetParams(_Params):
    field: Path
    allowed: Path


class CitationsParams(_Params):
    citations: Path
    sources: Path
    id: Member
    quote: Member
    text: Member


class ExpectedParams(_Params):
    fields: Annotated[list[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,62}$")]], Field(min_length=1)] | None = None


EVALUATOR_PARAMS: dict[str, type[BaseModel]] = {
    "expected": ExpectedParams,
    "not_empty": FieldParams,
    "max_words": MaxWordsParams,
    "language": LanguageParams,
    "no_pii": NoPiiParams,
    "regex": RegexParams,
    "unique_items": UniqueItemsParams,
    "ids_in_allowed_set": IdsInAllowedSetParams,
    "citations_in_sources": CitationsParams,
    "cost_usd": NoParams,
    "latency_ms": NoParams,
}
EVALUATOR_PARAMS.update({name: model for name, (_, model) in RUNTIME_BUILTINS.items()})

# Built-in policies of containers, by where they are used (reference: project model §3.1).
POLICIES = {
    "join": ("all", "any", "first_success", "quorum"),
    "on_item_error": ("skip", "fail", "default"),
    "stop": ("threshold", "stagnation"),
    "select": ("last", "best"),
}
