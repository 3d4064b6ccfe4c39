"""Pure statistics for pytest-aqven: samples, intervals, verdicts, sentences, launch plan.

numpy/scipy only; knows nothing of pytest or the rest of pytest_aqven. The names below are imported on
first use (PEP 562), so collecting experiments does not import the interval machinery.
"""
from importlib import import_module
from typing import Any

_NAMES = {
    **dict.fromkeys(("Attempt", "Cell", "CheckValue", "Estimate", "ExperimentVerdict", "Guardrail", "LaunchPlan",
                     "Look", "Pair", "SeriesFacts", "Threshold"), ".model"),
    "experiment_salt": ".model",
    "SERIES_METRICS": ".samples", "metric_info": ".samples",
    "decide": ".verdicts",
    "launch_plan": ".plan",
}
__all__ = list(_NAMES)


def __getattr__(name: str) -> Any:      # the names of _NAMES, imported on first use
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_NAMES[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_NAMES])
