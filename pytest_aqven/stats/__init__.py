"""Pure statistics for pytest-aqven: samples, intervals, verdicts, sentences, launch plan.

numpy/scipy only; knows nothing of pytest or the rest of pytest_aqven.
"""

from .model import (
    Attempt,
    Cell,
    CheckValue,
    Estimate,
    Guardrail,
    LaunchPlan,
    Look,
    Pair,
    SeriesFacts,
    Threshold,
    Verdict,
    experiment_salt,
)
from .samples import SERIES_METRICS, metric_info
from .verdicts import decide

__all__ = [
    "Attempt",
    "Cell",
    "CheckValue",
    "Estimate",
    "Guardrail",
    "LaunchPlan",
    "Look",
    "Pair",
    "SeriesFacts",
    "Threshold",
    "Verdict",
    "SERIES_METRICS",
    "decide",
    "experiment_salt",
    "metric_info",
]

from .plan import launch_plan  # noqa: E402

__all__ += ["launch_plan"]
