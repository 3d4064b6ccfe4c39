"""pytest-aqven: AQVEN experiments as pytest test suites, with honest statistics.

The public names are imported on first use (PEP 562): pytest imports this package in every run of an
environment where the plugin is installed, and a suite without experiments must not pay for pydantic.
"""
from importlib import import_module
from typing import Any

__version__ = "0.1.0"
_PUBLIC = {
    "EvalContext": ".engine.evaluators", "NoParams": ".engine.evaluators",
    "Verdict": ".engine.evaluators",
    "AttemptIdentity": ".providers.base", "Message": ".providers.base", "ModelRequest": ".providers.base",
    "ModelResponse": ".providers.base", "ProviderError": ".providers.base",
    "Part": ".providers.base", "ToolCall": ".providers.base", "ToolDef": ".providers.base",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:     # the public names, imported on first use
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
