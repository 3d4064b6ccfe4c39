"""Which attempts count for which metric, and the per-case samples built from them (reference §3).

The case is the unit: every sample keeps the attempts grouped by case, cases sorted by name.
Infrastructure errors are never counted as failures: they only enter infra_error_rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress, repeat as endless
from operator import attrgetter
from typing import Any, Protocol

import numpy as np

from .. import codes
from .model import Attempt, CheckValue

COUNTED_OUTCOMES = frozenset(codes.COUNTED)
SCORED_STATES = frozenset({codes.CheckState.PASSED.value, codes.CheckState.FAILED.value})
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


Scale = tuple[float, float]  # (lowest, highest) value a metric can take


@dataclass(frozen=True)
class MetricInfo:
    name: str
    shape: str  # rate | mean | ratio | quantile
    direction: str
    unit: str  # rate | score | ordinal | usd | ms
    quantile: float | None = None
    min_attempts: int = 1
    scale: Scale | None = None  # the declared range of a score check's values (a judge's output type)


def metric_info(name: str, check_kinds: Mapping[str, str], scales: Mapping[str, Scale] | None = None) -> MetricInfo:
    """Shape, default direction and unit of a metric; any non-series name is a check id, and `scales`
    the declared ranges of score checks (SeriesFacts.check_scales)."""
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
    scale = (scales or {}).get(name)
    if kind == "continuous":
        return MetricInfo(name, "mean", HIGHER, "score", scale=scale)
    if kind == "ordinal":
        return MetricInfo(name, "mean", HIGHER, "ordinal", scale=scale)
    # binary checks, and unknown names (an empty rate: no data)
    return MetricInfo(name, "rate", HIGHER, "rate")


Group = Sequence[float] | np.ndarray  # one case's values


@dataclass(frozen=True, eq=False)
class Sample:
    """Per-case groups of one metric for one variant, stored flat.

    flat holds every included attempt's value case by case (cases sorted by name, repeats in order;
    rates: 1.0/0.0, means: scores, quantiles: latencies) and sizes[i] is case i's number of attempts.
    For ratios flat holds the costs and flat_passes the matching 0/1 passes.
    """

    info: MetricInfo
    cases: tuple[str, ...]
    flat: np.ndarray
    sizes: np.ndarray
    flat_passes: np.ndarray | None = None

    @classmethod
    def from_groups(cls, info: MetricInfo, cases: Sequence[str], values: Sequence[Group],
                    passes: Sequence[Group] | None = None) -> Sample:
        """Build from one array per case (values[i] = case i's attempts)."""
        def join(groups: Sequence[Group]) -> np.ndarray:
            return np.concatenate([np.asarray(g, dtype=float) for g in groups]) if len(groups) else np.zeros(0)

        sizes = np.array([len(v) for v in values], dtype=int)
        return cls(info, tuple(cases), join(values), sizes, None if passes is None else join(passes))

    @property
    def n_cases(self) -> int:
        return len(self.cases)

    @property
    def n_attempts(self) -> int:
        return int(self.flat.size)

    @cached_property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(int)

    @cached_property
    def case_index(self) -> np.ndarray:
        """The case (0..C-1) of every entry of flat."""
        return np.repeat(np.arange(self.n_cases), self.sizes)

    @cached_property
    def values(self) -> tuple[np.ndarray, ...]:
        return tuple(np.split(self.flat, self.starts[1:])) if self.n_cases else ()

    @cached_property
    def passes(self) -> tuple[np.ndarray, ...] | None:
        if self.flat_passes is None:
            return None
        return tuple(np.split(self.flat_passes, self.starts[1:])) if self.n_cases else ()

    def _per_case(self, flat: np.ndarray) -> np.ndarray:
        sums: np.ndarray = np.add.reduceat(flat, self.starts) if self.n_cases else np.zeros(0)
        return sums

    def counts(self) -> np.ndarray:
        return self.sizes.astype(float)

    def sums(self) -> np.ndarray:
        return self._per_case(self.flat)

    def case_means(self) -> np.ndarray:
        means: np.ndarray = self.sums() / self.counts()
        return means

    def pass_counts(self) -> np.ndarray:
        assert self.flat_passes is not None
        return self._per_case(self.flat_passes)

    def subset(self, names: Sequence[str]) -> Sample:
        """The given cases, in the given order."""
        if tuple(names) == self.cases:
            return self
        where = {name: i for i, name in enumerate(self.cases)}
        rows = np.array([where[name] for name in names], dtype=int)
        sizes = self.sizes[rows]
        # entry j of case r sits at starts[r] + j: gather every selected case's entries in order
        take = np.repeat(self.starts[rows] - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        passes = None if self.flat_passes is None else self.flat_passes[take]
        return Sample(self.info, tuple(names), self.flat[take], sizes, passes)


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
    return _all_binary_passed(attempt.checks, check_kinds)


_COLUMNS = (
    "variant", "case", "repeat", "finished", "outcome", "passed", "cost_usd", "latency_ms",
    "schema_valid_first_try", "checks",
)
_NOTHING = Attempt("", "", 0, "cancelled", None, finished=False)  # stands in for no attempts: counts nowhere


_ABSENT = CheckValue("absent", None)
_STATE, _VALUE = attrgetter("state"), attrgetter("value")
_STATE_CODES = {"passed": 1, "failed": 2}  # scored states; any other state: 0

_OUTCOMES = codes.OUTCOMES
_OUTCOME_CODES = {name: i for i, name in enumerate(_OUTCOMES)}
_UNKNOWN = len(_OUTCOMES)  # the code of any other outcome
_COUNTED_CODES = np.array([name in COUNTED_OUTCOMES for name in _OUTCOMES] + [False])


UNMEASURED_OUTCOMES = ("infra_error", "budget_cut", "cancelled")   # selected, finished, never measured


@dataclass(frozen=True)
class Unmeasured:
    """Attempts that were selected and finished without a measurement (UNMEASURED_OUTCOMES): per variant,
    case -> how many; and how many of each outcome (any outcome statistics does not know is an
    infrastructure error)."""

    per_case: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    by_outcome: Mapping[str, int] = field(default_factory=dict)

    @property
    def attempts(self) -> int:
        return sum(self.by_outcome.values())


class SampleTable(Protocol):
    """What a verdict reads: an AttemptTable, or a finding's sufficient data (`evidence.EvidenceTable`)."""

    def tallies(self) -> tuple[int, int, int]: ...

    def unmeasured(self) -> Unmeasured: ...

    def sample(self, variant: str, info: MetricInfo) -> Sample: ...


class AttemptTable:
    """Attempts as numpy columns, sorted by variant, case name and repeat: read once, sampled per metric.

    The order never depends on the order attempts arrive (xdist). A value left unset (None) is NaN
    here, and a NaN value counts as unknown: the attempt is left out of that metric.
    """

    def __init__(self, attempts: Iterable[Attempt], check_kinds: Mapping[str, str]) -> None:
        attempts = list(attempts) or [_NOTHING]
        self.check_kinds = check_kinds

        def column(name: str) -> list[Any]:
            return list(map(attrgetter(name), attempts))

        variant, case, repeats, finishes, outcomes, passes, cost, latency, schema, checks = map(column, _COLUMNS)
        size = len(attempts)
        self.variants = sorted(set(variant))
        self.names = sorted(set(case))
        v_code = {name: i for i, name in enumerate(self.variants)}
        c_code = {name: i for i, name in enumerate(self.names)}
        variant_index = np.fromiter(map(v_code.__getitem__, variant), int, size)
        case_index = np.fromiter(map(c_code.__getitem__, case), int, size)
        repeat = np.fromiter(repeats, int, size)
        repeat -= repeat.min()
        key = (variant_index * len(self.names) + case_index) * (int(repeat.max()) + 1) + repeat
        order = np.argsort(key, kind="stable")
        self.variant_index = variant_index[order]
        self.case_index = case_index[order]
        finished = np.fromiter(finishes, bool, size)[order]
        self.finished = int(finished.sum())
        outcome = np.fromiter(map(_OUTCOME_CODES.get, outcomes, endless(_UNKNOWN)), int, size)[order]
        self._not_measured = finished & ~_COUNTED_CODES[outcome]
        self._outcome = outcome
        self.settled = finished & (outcome != _OUTCOME_CODES["cancelled"])
        self.counted = finished & _COUNTED_CODES[outcome]
        self.infra_error: np.ndarray = outcome == _OUTCOME_CODES["infra_error"]
        self.cost = np.array(cost, dtype=float)[order]
        self.latency = np.array(latency, dtype=float)[order]
        self.schema = np.array(schema, dtype=float)[order]
        self._checks, self._order = checks, order  # check columns are read when first asked for
        passed = np.array(passes, dtype=float)[order]
        unset = np.flatnonzero(np.isnan(passed))
        if unset.size:  # derived from the binary checks, as attempt_passed does
            ok = outcome[unset] == _OUTCOME_CODES["ok"]
            passed[unset] = [bool(o) and _all_binary_passed(checks[order[i]], check_kinds) for i, o in zip(unset, ok)]
        self.passed = passed
        self._check_columns: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def tallies(self) -> tuple[int, int, int]:
        """(finished, settled, settled with an infrastructure error) attempts."""
        return self.finished, int(self.settled.sum()), int((self.settled & self.infra_error).sum())

    def unmeasured(self) -> Unmeasured:
        where = self._not_measured
        outcomes = [_OUTCOMES[o] if o < _UNKNOWN else "infra_error" for o in self._outcome[where].tolist()]
        by_outcome = {name: outcomes.count(name) for name in UNMEASURED_OUTCOMES if name in outcomes}
        per_case: dict[str, dict[str, int]] = {}
        for v, c in zip(self.variant_index[where].tolist(), self.case_index[where].tolist()):
            cases = per_case.setdefault(self.variants[v], {})
            cases[self.names[c]] = cases.get(self.names[c], 0) + 1
        return Unmeasured(per_case, by_outcome)

    def _check(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scored, passed, value) of one check on every attempt; value NaN when unset."""
        if name not in self._check_columns:
            found = [c.get(name, _ABSENT) for c in self._checks]
            size = len(found)
            state = np.fromiter(map(_STATE_CODES.get, map(_STATE, found), endless(0)), int, size)[self._order]
            value = np.array(list(map(_VALUE, found)), dtype=float)[self._order]
            self._check_columns[name] = (state > 0, state == _STATE_CODES["passed"], value)
        return self._check_columns[name]

    def sample(self, variant: str, info: MetricInfo) -> Sample:
        """One variant's included attempts of one metric, grouped by case; cases with none are dropped."""
        if variant not in self.variants:
            return Sample(info, (), np.zeros(0), np.zeros(0, dtype=int), np.zeros(0) if info.shape == "ratio" else None)
        mine = self.variant_index == self.variants.index(variant)
        name = info.name
        passes = None
        if name == "infra_error_rate":
            keep, values = mine & self.settled, self.infra_error.astype(float)
        else:
            keep = mine & self.counted
            if name == "success_rate":
                values = self.passed
            elif name == "schema_valid_first_try":
                values = self.schema
            elif name in ("cost_usd", "cost_of_pass"):
                values = self.cost  # unknown cost: out of numerator and denominator alike
                passes = self.passed if name == "cost_of_pass" else None
            elif info.shape == "quantile":
                values = self.latency
            else:
                scored, passed, value = self._check(name)
                keep = keep & scored
                values = passed.astype(float) if info.shape == "rate" else value
            keep = keep & ~np.isnan(values)
        sizes = np.bincount(self.case_index[keep], minlength=len(self.names))
        present = sizes > 0
        cases = tuple(compress(self.names, present))
        return Sample(info, cases, values[keep], sizes[present], None if passes is None else passes[keep])


def _all_binary_passed(checks: Mapping[str, CheckValue], check_kinds: Mapping[str, str]) -> bool:
    return all(
        value.state == "passed"
        for check, value in checks.items()
        if check_kinds.get(check, "binary") == "binary" and value.state in SCORED_STATES
    )


def build_sample(
    attempts: Iterable[Attempt], variant: str, info: MetricInfo, check_kinds: Mapping[str, str]
) -> Sample:
    """Group one variant's included attempts of one metric by case (sorted by name)."""
    return AttemptTable(attempts, check_kinds).sample(variant, info)


def bounded_scale(sample: Sample) -> Scale | None:
    """The range the metric's values are known to lie in, so the distribution-free betting interval
    applies on it; None when there is none.

    Rates lie in [0, 1]. A score check lies in its declared scale (an ordinal 1-5 judge, a `Score`, a
    number with minimum and maximum) when every observed score does; without a declaration it counts
    as [0, 1] when every observed score lies there (judge scores), and as unbounded otherwise.
    """
    info = sample.info
    if info.shape == "rate":
        return (0.0, 1.0)
    if info.shape != "mean" or info.unit not in ("score", "ordinal") or not sample.n_attempts:
        return None
    low, high = info.scale or (0.0, 1.0)
    inside = bool(np.all((sample.flat >= low) & (sample.flat <= high)))
    return (low, high) if inside and high > low else None


def positive_unbounded(sample: Sample) -> bool:
    """Whether the metric is a mean that is never negative and has no upper bound, so its case means
    are right-skewed by nature (cost, latency, scores on open scales): the skewness-corrected t applies.

    cost_usd always is; a score check is when every observed score is >= 0 and some lie above 1
    (scores in [0, 1] are bounded; an ordinal scale is bounded by its levels).
    """
    info = sample.info
    if info.shape != "mean" or not sample.n_attempts:
        return False
    if info.unit in ("usd", "ms"):
        return True
    if info.unit != "score" or info.scale is not None:
        return False
    return bool(np.all(sample.flat >= 0.0) and np.any(sample.flat > 1.0))
