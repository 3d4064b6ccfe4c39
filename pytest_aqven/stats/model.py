"""Data the statistics package takes and returns. Plain frozen dataclasses, no behaviour."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CheckValue:
    state: str  # "passed" | "failed" | "error" | "skipped"
    value: float | None  # binary: 1.0/0.0; continuous/ordinal: the score


@dataclass(frozen=True)
class Attempt:
    variant: str
    case: str
    repeat: int  # 1-based
    outcome: str  # ok | model_fail | schema_invalid | refusal | infra_error | budget_cut | cancelled
    passed: bool | None  # None when the outcome is not counted
    checks: Mapping[str, CheckValue] = field(default_factory=dict)
    cost_usd: float | None = None
    latency_ms: float | None = None
    schema_valid_first_try: bool | None = None
    finished: bool = True


@dataclass(frozen=True)
class Threshold:
    metric: str
    above: float | None = None
    below: float | None = None
    margin: float = 0.0
    variant: str | None = None
    direction: str | None = None


@dataclass(frozen=True)
class Guardrail:
    metric: str
    margin: float
    direction: str | None = None
    relative: bool = False


@dataclass(frozen=True)
class Pair:
    kind: str  # "compare" | "noninferior"
    baseline: str
    candidate: str
    primary: str
    margin: float = 0.0
    direction: str | None = None
    guardrails: tuple[Guardrail, ...] = ()


@dataclass(frozen=True)
class Look:
    pass


def experiment_salt(package: str, experiment: str) -> str:
    """SeriesFacts.salt of an experiment: the same in every series, clone and machine."""
    return f"{package}/{experiment}"


# the statistics a verdict is decided with, by version: a finding records it (method.statistics) and `aqven check`
# decides a finding of an earlier version again only to say what today's would read (findings/verify.py).
# 1: before it was recorded; 2: unmeasured attempts counted against the claim, declared scales, exact agreement
# bounds, cost tails, sentences at their precision; 3: a cost with no per-attempt bound known decides nothing on its
# upper bound, cost_of_pass hulled with betting intervals when it is known
STATISTICS_VERSION = 3
KEY_HEX = 16  # 64 bits of SHA-256: no two cases of a dataset collide in practice


def order_key(salt: str, name: str) -> str:
    """What the betting interval sorts a case by (betting.case_order): a hash of its name salted, never its score."""
    return hashlib.sha256(f"{salt}\x00{name}".encode()).hexdigest()


def case_key(salt: str, name: str) -> str:
    """A case's name in findings and the evidence table: its name is never written for held-out cases."""
    return hashlib.sha256(f"{salt}\x00case\x00{name}".encode()).hexdigest()[:KEY_HEX]


@dataclass(frozen=True)
class SeriesFacts:
    series_id: str  # for messages only: no interval, verdict or sentence reads it
    split: str  # "dev" | "holdout"
    variants: tuple[str, ...]  # plan order
    check_kinds: Mapping[str, str] = field(default_factory=dict)  # check id -> binary|continuous|ordinal
    # score check id -> (lowest, highest) declared value (a judge's output type): decided on that range
    check_scales: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # judge check id -> why validated_by does not hold (words completing "judge <check> ..."); a set of ids: each
    # has no validated_by
    unvalidated_judges: Mapping[str, str] | frozenset[str] = frozenset()
    total_attempts: int = 0  # cases x repeats x variants planned
    cancelled: bool = False
    budget_cut: bool = False  # the spend cap cut attempts of the series (or stopped it)
    inputs_changed: bool = False
    changed_inputs: str = ""  # the input files that changed, as the sentence names them ("" when unknown)
    family: str = "robust"  # "robust" (hull with the betting interval) | "model"
    # what orders the cases of the betting interval and seeds the bootstrap: the package and the
    # experiment, never the series id (the same data must give the same verdict in every series)
    salt: str = ""
    # the most one attempt can cost (USD), known before the data (an agent's max_tokens at the model's
    # price); None: unknown. Under "robust" it bounds cost_usd for a distribution-free interval.
    cost_bound: float | None = None
    # stopped early (--aqven-stop-early): the cases the series selected, of which its attempts are the first in
    # the betting order; its cells are then the betting sequence's (stats/early.py). 0: it ran to the end
    planned_cases: int = 0


@dataclass(frozen=True)
class Estimate:
    """One interval. For pairs the value is the candidate's advantage (positive = candidate better)."""

    value: float | None
    low: float | None  # None = unbounded or not computable
    high: float | None
    method: str
    cases: int
    attempts: int
    n_eff: float | None = None
    reliability: str = "ok"  # "ok" | "low" | "degenerate"
    family: str = "model"  # "robust" (hull of model and betting interval) | "model"
    degenerate: str | None = None  # no_data | too_few_cases | too_few_attempts | uninformative | no_discordance | numeric
    seed: int | None = None
    resamples: int | None = None
    p_value: float | None = None
    unit: str = "rate"  # rate | score | ordinal | usd | ms | log_ratio
    low_from: str | None = None  # "model" | "betting": which interval gave the low bound
    high_from: str | None = None
    model_low: float | None = None
    model_high: float | None = None
    betting_low: float | None = None
    betting_high: float | None = None
    cost_bound: float | None = None  # cost_usd: the per-attempt bound its interval used (None: none known)


@dataclass(frozen=True)
class Cell:
    metric: str
    role: str  # "primary" | "guardrail"
    variant: str
    baseline: str | None  # None for threshold cells
    direction: str  # "higher_is_better" | "lower_is_better"
    bound: str | None  # "above" | "below" | None
    threshold: float | None  # declared bound of a threshold question
    margin: float  # declared margin
    relative: bool
    estimate: Estimate
    verdict: str  # "pass" | "fail" | "unclear"
    edge: float | None = None  # the value the interval was compared with
    decided_by: str | None = None  # "model" | "betting": the family whose bound decided
    # the interval with the unmeasured attempts counted against the verdict the measured ones gave, when that
    # undid it (stats/missing.py): the cell is then unclear
    counted_against: Estimate | None = None


@dataclass(frozen=True)
class ExperimentVerdict:
    """An experiment's verdict on its question: its state (codes.VerdictState), why, its sentence and its cells."""
    state: str | None  # None for a look | confirmed | refuted | inconclusive | signal | invalid
    reason: str | None
    text: str
    cells: tuple[Cell, ...] = ()
    metrics: Mapping[str, Mapping[str, Estimate]] = field(default_factory=dict)


@dataclass(frozen=True)
class ObservedPlan:
    """The cases that give 80% power at the rates observed so far (the latest finished series), beside the
    pre-registered figure (the truth one margin past the edge)."""
    value: float  # the primary observed: a rate or mean, or a pair's difference on its good side (+ is better)
    cases: int  # the cases it was observed on
    edge: float  # on the same scale
    recommended_cases: int | None  # None: not past the edge (no number of cases confirms), or search_pending
    power: float | None = None  # simulated P(confirmed) at recommended_cases
    closed_form_cases: int | None = None
    capped: bool = False  # the simulated search reached MAX_SIMULATED_CASES below 80% power
    search_pending: bool = False
    text: str = ""


@dataclass(frozen=True)
class LaunchPlan:
    cases: int
    repeats: int
    variants: int
    attempts: int
    available: int
    half_width: float | None
    mde: float | None
    margin: float | None
    spread: float | None
    spread_source: str  # history | prior | none
    icc: float
    recommended_cases: int
    reason: str  # look | no_margin | no_history | short_of_cases | wide | enough
    text: str
    below_recommended: bool
    closed_form_cases: int | None = None  # before the simulated search
    power: float | None = None  # simulated P(confirmed) at recommended_cases
    search_pending: bool = False  # the simulated search was not run (nor cached): recommended_cases is the closed form
    family: str = "robust"
    capped: bool = False  # the simulated search reached MAX_SIMULATED_CASES below 80% power: more cases are needed
    observed: ObservedPlan | None = None  # at the rates observed so far, when a finished series has them
    # --aqven-stop-early: the cases a series of `cases` is expected to use when the truth is one margin past the
    # edge (simulated with the verdict's own stop); None when not simulated or its question cannot stop
    stop_early_cases: float | None = None
