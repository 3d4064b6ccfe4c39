"""Provider id -> provider object, from aqven.yaml."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from ..project import coderefs
from ..project.specs import ProviderSpec
from . import prices, secrets
from .base import Provider, ProviderError
from .catalog import CATALOG, Entry
from .function import FunctionProvider

if TYPE_CHECKING:
    from .cassettes import Cassettes

_cassettes: dict[tuple[Path, str], "Cassettes"] = {}
# one provider (so one pooled client) per declaration and process
_built: dict[tuple[Path, str, str | None], Provider] = {}


def build(spec: ProviderSpec, *, package: str, root: Path, cassettes: str | None = None) -> Provider:
    """The provider, or ProviderError (an infrastructure error of every attempt that uses it) raised
    before any request: a bad code reference, an unknown prefix, a missing key.

    `cassettes` (record | replay | record_missing) puts an HTTP provider behind the module root's
    cassettes; replaying needs no key. Every experiment of a process shares one HTTP provider object.
    Calls nothing else priced take the project's declared price (providers/prices.py)."""
    declared = prices.load(root)
    if spec.kind == "code":
        provider = _live(spec, package=package, root=root)
    else:
        key = (root, spec.model_dump_json(), cassettes)
        if key not in _built:
            _built[key] = _build(spec, package=package, root=root, cassettes=cassettes)
        provider = _built[key]
    if any(model.startswith(f"{spec.id}:") for model in declared.prices):
        return prices.PricedProvider(spec.id, provider, declared)
    return provider


def forget() -> None:
    """Drop every built provider and cassette set (as a new process would start)."""
    _built.clear()
    _cassettes.clear()


def _build(spec: ProviderSpec, *, package: str, root: Path, cassettes: str | None) -> Provider:
    if cassettes is None:
        return _live(spec, package=package, root=root)
    from .cassettes import CassetteProvider, Cassettes
    if (root, cassettes) not in _cassettes:
        _cassettes[(root, cassettes)] = Cassettes(root, cassettes)
    live: Provider | ProviderError
    try:
        live = _live(spec, package=package, root=root)
    except ProviderError as exc:
        if cassettes == "record":
            raise
        live = exc                     # raised only when a call is missing from the cassettes
    return CassetteProvider(spec.id, live, _cassettes[(root, cassettes)])


def _live(spec: ProviderSpec, *, package: str, root: Path) -> Provider:
    if spec.kind == "code":
        try:
            run = cast(str, spec.run)       # the spec's validator: kind code has run
            fn = coderefs.resolve(run, package=package, root=root, here=root / "aqven.py")
        except coderefs.CodeRefError as exc:
            raise ProviderError("code_invalid", f"provider {spec.id}: {exc}") from None
        return FunctionProvider(fn)
    from . import openai_compat
    entry = None
    if spec.kind == "catalog":
        entry = CATALOG.get(spec.id)
        if entry is None:
            raise ProviderError("MODEL_FEATURE_UNSUPPORTED",
                                f"provider {spec.id}: not a catalog prefix; declare kind: openai_compatible with "
                                "base_url for another endpoint")
        if entry.unsupported:
            raise ProviderError("MODEL_FEATURE_UNSUPPORTED", f"provider {spec.id}: {entry.unsupported}")
    key = api_key(spec, entry, root)
    try:
        return openai_compat.build(spec, entry, root=root, api_key=key, key_names=key_variables(spec, entry)[0])
    except (TypeError, ValueError) as exc:
        raise ProviderError("provider_config_invalid", f"provider {spec.id}: params: {exc}") from None


def key_variables(spec: ProviderSpec, entry: Entry | None) -> tuple[tuple[str, ...], bool]:
    """The variables the key is read from, and whether one is required."""
    if spec.api_key is not None:
        name = secrets.env_name(spec.api_key)
        if name is None:
            raise ProviderError("provider_key_missing", f"provider {spec.id}: api_key must be a reference "
                                                        "ref:env/NAME, never the key itself")
        return (name,), True
    if entry is None:
        return (), False
    return entry.key_vars, entry.key_required


def api_key(spec: ProviderSpec, entry: Entry | None, root: Path) -> str | None:
    """From the process environment, else the module root's .env; provider_key_missing names the variable."""
    names, required = key_variables(spec, entry)
    for name in names:
        value = secrets.lookup(name, root)
        if value:
            return value
    if required:
        fix = f"set {' or '.join(names)} in the environment or in {root / '.env'}"
        raise ProviderError("provider_key_missing", f"provider {spec.id}: no API key: {fix}",
                            public=f"provider {spec.id}: no API key ({' or '.join(names)} is not set)", fix=fix)
    return None
