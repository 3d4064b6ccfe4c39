"""Which attempts count for which metric, and the per-case samples built from them (reference §3).

The case is the unit: every sample keeps the attempts grouped by case, cases sorted by name.
Infrastructure errors are never counted as failures: they only enter infra_error_rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .model import Attempt

COUNTED_OUTCOMES = frozenset({"ok", "model_fail", "schema_invalid", "refusal"})
SCORED_STATES = frozenset({"passed", "failed"})
HIGHER = "higher_is_better"
LOWER = "lower_is_better"

SERIES_METRICS = (
    "success_rate",
    "cost_usd",
    "cost_of_pass",
    "latency_p50_ms",
    "latency_p95_ms",
    "schema_valid_first_try",
    "infra_error_rate",
)


@dataclass(frozen=True)
class MetricInfo:
    name: str
    shape: str  # rate | mean | ratio | quantile
    direction: str
    unit: str  # rate | score | ordinal | usd | ms
    quantile: float | None = None
    min_attempts: int = 1


def metric_info(name: str, check_kinds: Mapping[str, str]) -> MetricInfo:
    """Shape, default direction and unit of a metric; any non-series name is a check id."""
    if name == "success_rate" or name == "schema_valid_first_try":
        return MetricInfo(name, "rate", HIGHER, "rate")
    if name == "infra_error_rate":
        return MetricInfo(name, "rate", LOWER, "rate")
    if name == "cost_usd":
        return MetricInfo(name, "mean", LOWER, "usd")
    if name == "cost_of_pass":
        return MetricInfo(name, "ratio", LOWER, "usd")
    if name == "latency_p50_ms":
        return MetricInfo(name, "quantile", LOWER, "ms", 0.5, 1)
    if name == "latency_p95_ms":
        return MetricInfo(name, "quantile", LOWER, "ms", 0.95, 20)
    kind = check_kinds.get(name)
    if kind == "continuous":
        return MetricInfo(name, "mean", HIGHER, "score")
    if kind == "ordinal":
        return MetricInfo(name, "mean", HIGHER, "ordinal")
    # binary checks, and unknown names (an empty rate: no data)
    return MetricInfo(name, "rate", HIGHER, "rate")


@dataclass(frozen=True)
class Sample:
    """Per-case groups of one metric for one variant.

    values[i] holds case i's attempt values (rates: 1.0/0.0, means: scores, quantiles: latencies).
    For ratios values[i] is the case's costs and passes[i] its 0/1 passes.
    """

    info: MetricInfo
    cases: tuple[str, ...]
    values: tuple[np.ndarray, ...]
    passes: tuple[np.ndarray, ...] | None = None

    @property
    def n_cases(self) -> int:
        return len(self.cases)

    @property
    def n_attempts(self) -> int:
        return int(sum(len(v) for v in self.values))

    def counts(self) -> np.ndarray:
        return np.array([len(v) for v in self.values], dtype=float)

    def sums(self) -> np.ndarray:
        return np.array([float(np.sum(v)) for v in self.values], dtype=float)

    def case_means(self) -> np.ndarray:
        return self.sums() / self.counts()

    def pass_counts(self) -> np.ndarray:
        assert self.passes is not None
        return np.array([float(np.sum(p)) for p in self.passes], dtype=float)

    def subset(self, names: Sequence[str]) -> Sample:
        where = {name: i for i, name in enumerate(self.cases)}
        rows = [where[name] for name in names]
        passes = None if self.passes is None else tuple(self.passes[i] for i in rows)
        return Sample(self.info, tuple(names), tuple(self.values[i] for i in rows), passes)


def is_counted(attempt: Attempt) -> bool:
    return attempt.finished and attempt.outcome in COUNTED_OUTCOMES


def is_settled(attempt: Attempt) -> bool:
    return attempt.finished and attempt.outcome != "cancelled"


def attempt_passed(attempt: Attempt, check_kinds: Mapping[str, str]) -> bool:
    """attempt.passed, derived when the caller left it unset on a counted attempt."""
    if attempt.passed is not None:
        return bool(attempt.passed)
    if attempt.outcome != "ok":
        return False
    return all(
        value.state == "passed"
        for check, value in attempt.checks.items()
        if check_kinds.get(check, "binary") == "binary" and value.state in SCORED_STATES
    )


def _value(attempt: Attempt, info: MetricInfo, check_kinds: Mapping[str, str]):
    """The attempt's contribution to the metric, or None when the attempt is not included."""
    name = info.name
    if name == "infra_error_rate":
        return (1.0 if attempt.outcome == "infra_error" else 0.0) if is_settled(attempt) else None
    if not is_counted(attempt):
        return None
    if name == "success_rate":
        return 1.0 if attempt_passed(attempt, check_kinds) else 0.0
    if name == "schema_valid_first_try":
        known = attempt.schema_valid_first_try
        return None if known is None else (1.0 if known else 0.0)
    if name == "cost_usd":
        return attempt.cost_usd
    if name == "cost_of_pass":
        if attempt.cost_usd is None:
            return None  # unknown cost: leave the attempt out of numerator and denominator alike
        return (attempt.cost_usd, 1.0 if attempt_passed(attempt, check_kinds) else 0.0)
    if info.shape == "quantile":
        return attempt.latency_ms
    check = attempt.checks.get(name)
    if check is None or check.state not in SCORED_STATES:
        return None
    if info.shape == "rate":
        return 1.0 if check.state == "passed" else 0.0
    return None if check.value is None else float(check.value)


def build_sample(
    attempts: Iterable[Attempt], variant: str, info: MetricInfo, check_kinds: Mapping[str, str]
) -> Sample:
    """Group one variant's included attempts by case (sorted by name); cases with nothing included are dropped."""
    keyed: dict[str, list] = {}
    for attempt in attempts:
        if attempt.variant != variant:
            continue
        value = _value(attempt, info, check_kinds)
        if value is None:
            continue
        keyed.setdefault(attempt.case, []).append((attempt.repeat, value))
    # sorted cases and repeats: the result must not depend on the order attempts arrive (xdist)
    names = tuple(sorted(keyed))
    groups = {name: [value for _, value in sorted(keyed[name], key=lambda item: item[0])] for name in names}
    if info.shape == "ratio":
        costs = tuple(np.array([c for c, _ in groups[n]], dtype=float) for n in names)
        passes = tuple(np.array([p for _, p in groups[n]], dtype=float) for n in names)
        return Sample(info, names, costs, passes)
    return Sample(info, names, tuple(np.array(groups[n], dtype=float) for n in names))


def bounded_unit(sample: Sample) -> bool:
    """Whether the metric lives in [0, 1], so the distribution-free betting interval applies.

    Rates always do. A score check counts as bounded when every observed score lies in [0, 1]
    (judge scores); an ordinal 1-5 scale or a cost-like score does not.
    """
    if sample.info.shape == "rate":
        return True
    if sample.info.shape != "mean" or sample.info.unit not in ("score", "ordinal"):
        return False
    if not sample.values:
        return False
    everything = np.concatenate(sample.values)
    return bool(np.all((everything >= 0.0) & (everything <= 1.0)))


def positive_unbounded(sample: Sample) -> bool:
    """Whether the metric is a mean that is never negative and has no upper bound, so its case means
    are right-skewed by nature (cost, latency, scores on open scales): the skewness-corrected t applies.

    cost_usd always is; a score check is when every observed score is >= 0 and some lie above 1
    (scores in [0, 1] are bounded; an ordinal scale is bounded by its levels).
    """
    info = sample.info
    if info.shape != "mean" or not sample.values:
        return False
    if info.unit in ("usd", "ms"):
        return True
    if info.unit != "score":
        return False
    everything = np.concatenate(sample.values)
    return bool(np.all(everything >= 0.0) and np.any(everything > 1.0))
