"""Prices a project declares for models no catalog knows (a vLLM or Ollama server, a function provider
that reports tokens only), without a key in AQVEN's own files: the table `[tool.aqven.prices]` of the
pyproject.toml in the module root or, failing one there, the nearest folder above it:

    [tool.aqven.prices]
    "lab:llama-3.1-8b" = { input = 0.10, output = 0.20 }     # USD per million input / output tokens

A declared price is the last source of the chain: a call the provider reports, its price list or
genai-prices priced keeps that cost; one nothing else priced costs tokens × the declared price
(`cost_source: project`), cached input tokens at the input price.
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import ModelRequest, ModelResponse, Provider, max_output_tokens

if TYPE_CHECKING:
    from ..project.specs import ProviderSpec

TABLE = "[tool.aqven.prices]"
KEY = re.compile(r"^[a-z][a-z0-9_-]*:.+$")      # an agent's model: "<provider id>:<model name>"
TEMPLATE = '"{model}" = {{ input = <USD per million input tokens>, output = <USD per million output tokens> }}'


@dataclass(frozen=True)
class Price:
    input: float         # USD per million input tokens
    output: float        # USD per million output tokens

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1_000_000


@dataclass(frozen=True)
class PriceProblem:
    """A declaration that does not fit the table: where (1-based line and column, when known) and why."""
    line: int | None
    column: int | None
    key: str
    message: str


@dataclass(frozen=True)
class ProjectPrices:
    file: Path | None                   # the pyproject.toml read, or None when there is none
    prices: dict[str, Price]            # "<provider>:<model>" -> its price
    problems: tuple[PriceProblem, ...] = ()
    declared: bool = False              # the file has a [tool.aqven.prices] table (valid or not)

    def price(self, provider: str, model: str) -> Price | None:
        return self.prices.get(f"{provider}:{model}")


def pyproject_of(root: Path) -> Path | None:
    """The pyproject.toml of the module root, else of the nearest folder above it."""
    for folder in [root.resolve(), *root.resolve().parents]:
        if (folder / "pyproject.toml").is_file():
            return folder / "pyproject.toml"
    return None


def load(root: Path) -> ProjectPrices:
    file = pyproject_of(root)
    if file is None:
        return ProjectPrices(None, {})
    try:
        text = file.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        return ProjectPrices(file, {}, (PriceProblem(None, None, "", f"cannot be read: {exc}"),), True)
    except tomllib.TOMLDecodeError as exc:
        if "tool.aqven" not in text:
            return ProjectPrices(file, {})        # another tool's file to report
        where = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, column = (int(where[1]), int(where[2])) if where else (None, None)
        return ProjectPrices(file, {}, (PriceProblem(line, column, "", f"is not TOML: {exc}"),), True)
    table = data.get("tool", {}).get("aqven", {}).get("prices")
    if table is None:
        return ProjectPrices(file, {})
    if not isinstance(table, dict):
        return ProjectPrices(file, {}, (_problem(text, "prices", "tool.aqven.prices is not a table"),), True)
    prices, problems = {}, []
    for key, value in table.items():
        why = _why(key, value)
        if why is None:
            prices[key] = Price(float(value["input"]), float(value["output"]))
        else:
            problems.append(_problem(text, key, f'"{key}": {why}'))
    return ProjectPrices(file, prices, tuple(problems), True)


def _why(key: str, value: object) -> str | None:
    if not KEY.match(key):
        return 'a key is "<provider>:<model>", as an agent names its model'
    if not isinstance(value, dict) or set(value) != {"input", "output"}:
        return "a price is { input = <USD>, output = <USD> }, per million tokens, both and nothing else"
    for side in ("input", "output"):
        number = value[side]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) or number < 0:
            return f"{side} must be a number of USD at 0 or above, not {number!r}"
    return None


def _problem(text: str, key: str, message: str) -> PriceProblem:
    """At the first line that names the key (tomllib keeps no positions)."""
    for number, line in enumerate(text.splitlines(), 1):
        column = line.find(f'"{key}"') if key != "prices" else line.find(TABLE)
        if column >= 0:
            return PriceProblem(number, column + 1, key, message)
    return PriceProblem(None, None, key, message)


class PricedProvider:
    """A provider whose calls nothing else priced are priced by the project's declaration."""

    def __init__(self, provider_id: str, inner: Provider, prices: ProjectPrices) -> None:
        self.provider_id = provider_id
        self.inner = inner
        self.prices = prices

    def __getattr__(self, name: str) -> Any:       # resolve_mode, aclose, ... are the provider's own
        return getattr(self.inner, name)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.complete(request)
        price = self.prices.price(self.provider_id, request.model)
        if response.cost_usd is None and price is not None and response.outcome != "error":
            response = dataclasses.replace(response, cost_usd=price.cost(response.tokens_in, response.tokens_out),
                                           cost_source="project")
        most = max_output_tokens(request)
        if response.cost_bound_usd is None and price is not None and most is not None:
            response = dataclasses.replace(response, cost_bound_usd=price.cost(response.tokens_in,
                                                                               max(most, response.tokens_out)))
        return response


def unpriced_reason(provider: ProviderSpec, model: str, declared: ProjectPrices) -> str | None:
    """Why no call of `model` on `provider` (its ProviderSpec) can get a price, known before any call; None
    when one can: a declared price, OpenRouter (it reports each call's cost and lists its prices), a model
    genai-prices knows, or a function provider (its own code reports a cost, or not: known after a call)."""
    from .catalog import CATALOG
    from .pricing import genai_cost
    if declared.price(provider.id, model) is not None or provider.kind == "code":
        return None
    if provider.kind == "openai_compatible":
        return f"provider {provider.id} is an openai_compatible endpoint, which no price list covers"
    entry = CATALOG.get(provider.id)
    if entry is None or entry.unsupported or entry.price_list:
        return None
    if genai_cost(provider.id, model, 1000, 1000) is None:
        return f"genai-prices has no price for {model} at {provider.id}"
    return None


def what_to_do(model: str, declared: ProjectPrices, root: Path) -> str:
    where = declared.file if declared.file is not None else root / "pyproject.toml"
    return f"price it under {TABLE} in {os.path.relpath(where, root)}: " + TEMPLATE.format(model=model)


def calls_over_http(root: Path) -> bool:
    """aqven.yaml declares a provider that is not a function provider (read quickly: no project load)."""
    import yaml
    try:
        data = yaml.load((root / "aqven.yaml").read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader",
                                                                                         yaml.SafeLoader))
        return any(isinstance(p, dict) and p.get("kind", "catalog") != "code" for p in data.get("providers") or ())
    except Exception:         # aqven check reports what does not read
        return False
