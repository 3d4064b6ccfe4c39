"""Launch plan: how many cases a question needs (statistics.md §8, reference §4.9-4.10).

Closed form first: the cases that give 80% power when the truth lies one margin beyond the edge
(C = (z + z_beta)^2 * spread^2 * deff / (R * margin^2), deff = 1 + (R - 1) * ICC). The closed form is
optimistic for the recommended intervals (M1's guards, the robust hull), so a simulated search then
runs the verdict's own interval functions and strict edges on simulated series (1000 per candidate
number of cases), and takes the smallest number of cases whose P(confirmed) reaches 80%.

The search takes seconds per question, so it runs only when asked (`simulate=True`) and its result is
kept in a `cache` keyed by every input it reads (`search_inputs`): `pytest --collect-only` shows the
closed form, or the cached search; `aqven plan` runs the search and fills the cache.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from .edges import threshold_bound
from .estimates import Interval, clears, mean_interval, rate_interval
from .model import Attempt, LaunchPlan, Look, ObservedPlan, Pair, SeriesFacts, Threshold
from .pairs import contrast, orientation, pair_rate_interval, paired_mean_interval
from .samples import HIGHER, LOWER, SERIES_METRICS, MetricInfo, build_sample, metric_info

Z = 1.959963984540054
Z_POWER = 0.8416212335729143
POWER = 0.8
DEFAULT_ICC = 0.3
SIMULATED_SERIES = 1000  # per candidate number of cases: MC error of a power near 0.8 is 0.013
MAX_SIMULATED_CASES = 3000  # beyond this the closed form stands (the answer is "far more cases" anyway)
LOGIT_EFFECT_SD = 0.5  # case-to-case spread of a pair's effect on the logit scale (statistics.md §5.2)
SEARCH_VERSION = 1  # bump when simulated_power or search_cases change what they compute

Truth = Mapping[str, Any]  # what a plan is powered for (`planning_truth`): edge, value, spreads, flags
Searched = Callable[[Truth, int], tuple[int | None, float | None]]


def design_effect(repeats: int, icc: float) -> float:
    return 1 + (repeats - 1) * icc


def standard_error(spread: float, cases: int, repeats: int, icc: float) -> float:
    effective = cases * repeats / design_effect(repeats, icc)
    return math.inf if effective <= 0 else spread / math.sqrt(effective)


def closed_form_cases(spread: float, margin: float, repeats: int, icc: float) -> int:
    needed = ((Z + Z_POWER) * spread / margin) ** 2 * design_effect(repeats, icc) / repeats
    return max(2, math.ceil(needed))


def icc_of(groups: Sequence[np.ndarray]) -> float | None:
    """One-way ANOVA-style ICC of per-case values (reference §4.8)."""
    filled = [g for g in groups if len(g)]
    repeated = [np.var(g, ddof=1) for g in filled if len(g) >= 2]
    if not repeated or len(filled) < 2:
        return None
    within = float(np.mean(repeated))
    means = np.array([np.mean(g) for g in filled])
    mean_repeats = float(np.mean([len(g) for g in filled]))
    between = max(0.0, float(np.var(means, ddof=1)) - within / mean_repeats)
    total = between + within
    return 1.0 if total == 0 else between / total


def _cases_text(cases: int) -> str:
    return "1 case" if cases == 1 else f"{cases} cases"


def _times_text(repeats: int) -> str:
    return "once" if repeats == 1 else f"{repeats} times"


# ---------------------------------------------------------------------------------------------
# simulated series: (S, C) arrays fed to the verdict pipeline's own interval functions


def beta_binomial_rates(rng: np.random.Generator, mean: float, icc: float, shape: tuple[int, int]) -> np.ndarray:
    """Case pass rates with the given mean and beta-binomial ICC."""
    if icc <= 0:
        return np.full(shape, mean)
    if icc >= 1:
        rates: np.ndarray = (rng.random(shape) < mean).astype(float)
        return rates
    k = 1 / icc - 1
    return rng.beta(mean * k, (1 - mean) * k, size=shape)


def _expit_mean(a: float, sd: float) -> float:
    from scipy import special  # here, not at the top: --collect-only plans without scipy
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    return float(np.sum(weights * special.expit(a + sd * nodes)) / np.sqrt(2 * np.pi))


def logit_location(mean: float, sd: float) -> float:
    """a such that E[expit(a + sd * Z)] = mean (Gauss-Hermite)."""
    lo, hi = -30.0, 30.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _expit_mean(mid, sd) < mean else (lo, mid)
    return (lo + hi) / 2


def logit_pair_rates(rng: np.random.Generator, base_mean: float, diff: float, icc: float, effect_sd: float,
                     shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Paired case rates (statistics.md §5.2 DGP): shared logit case effects, a spread-out effect.

    sd_case from the ICC on the latent scale; the locations are solved so that the population means
    are exactly base_mean and base_mean + diff.
    """
    from scipy import special
    icc = min(max(icc, 1e-6), 0.95)
    sd_case = math.sqrt(icc / (1 - icc) * math.pi**2 / 3)
    a_b = logit_location(base_mean, sd_case)
    a_c = logit_location(base_mean + diff, math.hypot(sd_case, effect_sd))
    theta = rng.normal(0, sd_case, shape)
    u = rng.normal(0, effect_sd, shape)
    return special.expit(a_b + theta), special.expit(a_c + theta + u)


def simulated_series(question: Threshold | Pair, info: MetricInfo, cases: int, repeats: int, truth: Truth, seed: int,
                     series: int = SIMULATED_SERIES) -> tuple[Interval, np.ndarray, tuple[float, float], bool, bool]:
    """Simulated series at `cases`: (the primary's model-based interval, its per-case values, the span they lie
    in, whether they are bounded there, whether the good side is up)."""
    rng = np.random.default_rng([seed, cases])
    shape = (series, cases)
    n = np.full(shape, float(repeats))
    if isinstance(question, Threshold):
        above = question.above is not None
        if info.shape == "rate":
            rates = beta_binomial_rates(rng, truth["value"], truth["icc"], shape)
            k = rng.binomial(repeats, rates).astype(float)
            return rate_interval(k, n, "model"), k / n, (0.0, 1.0), True, above
        x = rng.normal(truth["value"], truth["case_sd"], shape)
        if truth["bounded"]:
            x = np.clip(x, 0.0, 1.0)
        return mean_interval(x, "model", None, truth.get("skewed", False)), x, (0.0, 1.0), truth["bounded"], above
    sign = orientation(truth["direction"])
    if info.shape == "rate":
        p_b, p_c = logit_pair_rates(rng, truth["base"], sign * truth["value"], truth["icc"], LOGIT_EFFECT_SD, shape)
        kb = rng.binomial(repeats, p_b).astype(float)
        kc = rng.binomial(repeats, p_c).astype(float)
        per_case, span = contrast(kc / n, kb / n, sign, 1.0)
        return pair_rate_interval(kc, n, kb, n, sign, 1.0, "model"), per_case, span, True, True
    d = rng.normal(truth["value"], truth["case_sd"], shape)
    if truth["bounded"]:
        d = np.clip(d, -1.0, 1.0)
    iv = paired_mean_interval(d, np.zeros_like(d), 1.0, 1.0, "model", None)
    return iv, d, (-1.0, 1.0), truth["bounded"], True


def simulated_power(question: Threshold | Pair, info: MetricInfo, cases: int, repeats: int, truth: Truth,
                    family: str, seed: int,
                    series: int = SIMULATED_SERIES) -> float:
    """P(the primary cell passes) over simulated series at `cases`, through the verdict's own
    interval functions (M1 / M2 / t, and the betting test under the robust family)."""
    iv, values, span, bounded, above = simulated_series(question, info, cases, repeats, truth, seed, series)
    return float(np.mean(clears(iv.low, iv.high, values, span, family, bounded, truth["edge"], above)))


def stopping_cases(question: Threshold | Pair, info: MetricInfo, cases: int, repeats: int, truth: Truth, seed: int,
                   series: int = SIMULATED_SERIES) -> float | None:
    """The expected number of cases a series of `cases` uses under --aqven-stop-early (stats/early.py, the
    verdict's own stop) on the same simulated series; None when its primary has no distribution-free bound."""
    from . import early
    iv, values, span, bounded, above = simulated_series(question, info, cases, repeats, truth, seed, series)
    if not bounded:
        return None
    clear, fail = early.clear_and_fail(values, span, truth["edge"], HIGHER if above else LOWER, cases)
    look, _ = early.stop_look([clear], [fail])
    return float(np.mean(np.where((look > 0) & (look < cases), look, cases)))


def search_cases(power_at: Callable[[int], float], start: int, limit: int = MAX_SIMULATED_CASES) -> tuple[int, float]:
    """Smallest C with power_at(C) >= POWER: geometric steps from the closed form, then bisection."""
    cache: dict[int, float] = {}

    def power(c: int) -> float:
        if c not in cache:
            cache[c] = power_at(c)
        return cache[c]

    c = max(2, min(start, limit))
    if power(c) >= POWER:
        hi = c
        while True:     # down until a number of cases falls short: lo
            nxt = max(2, int(hi * 0.8))
            if nxt == hi:
                return hi, power(hi)
            if power(nxt) >= POWER:
                hi = nxt
            else:
                lo = nxt
                break
    else:
        lo = c
        while True:     # up until a number of cases reaches the power: hi
            nxt = min(limit, max(lo + 1, math.ceil(lo * 1.25)))
            if power(nxt) >= POWER:
                hi = nxt
                break
            if nxt >= limit:
                return limit, power(limit)  # not reached within the limit
            lo = nxt
    while hi - lo > max(1, int(0.02 * hi)):
        mid = (lo + hi) // 2
        if power(mid) >= POWER:
            hi = mid
        else:
            lo = mid
    return hi, power(hi)


# ---------------------------------------------------------------------------------------------


def _target(question: Threshold | Pair) -> tuple[str, float | None]:
    if isinstance(question, Threshold):
        return question.metric, question.margin
    return question.primary, question.margin


def _history_groups(history: Sequence[Attempt], variant: str, info: MetricInfo,
                    kinds: Mapping[str, str]) -> list[np.ndarray]:
    return list(build_sample(history, variant, info, kinds).values)


def launch_plan(
    question: Threshold | Pair | Look,
    *,
    cases: int,
    repeats: int,
    variants: int,
    available: int,
    check_kinds: Mapping[str, str],
    history: Sequence[Attempt] = (),
    family: str = "robust",
    seed: int = 0,
    icc: float | None = None,
    simulate: bool = True,
    cache: MutableMapping[str, tuple[int, float]] | None = None,
) -> LaunchPlan:
    """The launch plan of a question; `icc` overrides the ICC (e.g. calibrated by an A/A series).
    The simulated search's result is read from `cache` (keyed by `search_inputs`), else computed when
    `simulate` (and stored in `cache`), else left out: the plan then rests on the closed form."""
    attempts = cases * repeats * variants
    base: dict[str, Any] = dict(cases=cases, repeats=repeats, variants=variants, attempts=attempts,
                                available=available, family=family)
    if isinstance(question, Look):
        text = f"a look runs {_cases_text(cases)} {_times_text(repeats)} each and gives no verdict"
        return LaunchPlan(**base, half_width=None, mde=None, margin=None, spread=None, spread_source="none",
                          icc=DEFAULT_ICC, recommended_cases=cases, reason="look", text=text,
                          below_recommended=False)
    metric, margin = _target(question)
    info = metric_info(metric, check_kinds)
    history = list(history)
    if isinstance(question, Threshold):
        tested = question.variant or _weakest(question, info, history, check_kinds)
    else:
        tested = question.candidate

    # the pre-registered figure rests on the question alone (a prior spread, the default ICC), so it is the same
    # on every run; what a finished series observed gives the second figure (observed_plan)
    spread, source, icc = _assumptions(question, info, tested, repeats, (), check_kinds, icc)
    seen_spread, seen_source, seen_icc = _assumptions(question, info, tested, repeats, history, check_kinds, icc)

    def plan(**fields: Any) -> LaunchPlan:
        return LaunchPlan(**base, margin=margin, spread=spread, spread_source=source, icc=icc, **fields)

    if margin is None or margin <= 0:
        return plan(half_width=None, mde=None, recommended_cases=cases, reason="no_margin",
                    text="the question has no margin, so no number of cases can be recommended",
                    below_recommended=False)
    if spread is None:
        return plan(half_width=None, mde=None, recommended_cases=cases, reason="no_history",
                    text=f"no history or prior spread for {metric}: run the planned cases and read the interval",
                    below_recommended=False)

    se = standard_error(spread, cases, repeats, icc)
    half_width, mde = Z * se, (Z + Z_POWER) * se
    closed = closed_form_cases(spread, margin, repeats, icc)
    truth = planning_truth(question, info, margin, spread, icc, repeats, (), check_kinds)

    def searched(truth: Truth, start: int) -> tuple[int | None, float | None]:
        """(cases, power) of the simulated search from `start`, from the cache, or (None, None) when not run."""
        if start > MAX_SIMULATED_CASES:
            return None, None
        key = search_inputs(question, info, repeats, truth, family, seed, start)
        found = cache.get(key) if cache is not None else None
        if found is None and simulate:
            found = search_cases(lambda c: simulated_power(question, info, c, repeats, truth, family, seed), start)
            if cache is not None:
                cache[key] = found
        return (int(found[0]), float(found[1])) if found is not None else (None, None)

    found, power = searched(truth, closed)
    stopping = None
    if family == "robust" and early_cannot_stop(question, check_kinds) is None:
        key = "stop_early|" + search_inputs(question, info, repeats, truth, family, seed, cases)
        stopped = cache.get(key) if cache is not None else None
        if stopped is None and simulate:
            expected = stopping_cases(question, info, cases, repeats, truth, seed)
            stopped = None if expected is None else (cases, expected)
            if cache is not None and stopped is not None:
                cache[key] = stopped
        stopping = None if stopped is None else float(stopped[1])
    needed = closed if found is None else found
    pending = found is None and closed <= MAX_SIMULATED_CASES
    observed = None
    if seen_source == "history" and seen_spread is not None and tested is not None:
        seen_truth = planning_truth(question, info, margin, seen_spread, seen_icc, repeats, history, check_kinds)
        observed = observed_plan(question, info, margin, seen_spread, seen_icc, repeats, history, check_kinds,
                                 seen_truth, searched)
    m = f"{margin:g}"
    # the recommendation is power-based: cases for an 80% chance to confirm when the truth lies one
    # margin past the edge (simulated with the verdict's own intervals, else the closed form)
    power_words = f"about {needed} cases give an {POWER:.0%} chance to confirm when the truth is one margin past the edge"
    if needed > available:
        reason = "short_of_cases"
        text = f"{power_words}, but only {available} are available"
    elif needed > cases:
        reason = "wide"
        text = (f"at {cases} cases the expected half-width is ±{half_width:.2f}, wider than the {m} margin; "
                f"{power_words}")
    else:
        reason = "enough"
        text = (f"at {cases} cases the expected half-width is ±{half_width:.2f}, within the {m} margin; "
                f"{power_words}")
    if stopping is not None:
        text += (f"; with --aqven-stop-early a series of {cases} cases is expected to use about {stopping:.0f} of them "
                 f"then (simulated)")
    return plan(half_width=half_width, mde=mde, recommended_cases=needed, reason=reason, text=text,
                below_recommended=cases < needed, closed_form_cases=closed, power=power,
                search_pending=pending, capped=power is not None and power < POWER, observed=observed,
                stop_early_cases=stopping)


def early_cannot_stop(question: Threshold | Pair, check_kinds: Mapping[str, str]) -> str | None:
    """Why a series of the question cannot stop early under the robust family (stats/early.py), else None."""
    from . import early
    return early.cannot_stop(question, SeriesFacts(series_id="", split="", variants=(), check_kinds=check_kinds))


def _assumptions(question: Threshold | Pair, info: MetricInfo, tested: str | None, repeats: int,
                 history: Sequence[Attempt], check_kinds: Mapping[str, str], icc_given: float | None
                 ) -> tuple[float | None, str, float]:
    """(spread, its source, ICC) a plan assumes: measured on `history` where it has them, else the prior of the
    question's metric (none for ratios, quantiles, cost_usd and names that are neither series metric nor check)."""
    icc = DEFAULT_ICC if icc_given is None else icc_given
    if icc_given is None and repeats > 1 and history and tested is not None and info.shape in ("rate", "mean"):
        measured = icc_of(_history_groups(history, tested, info, check_kinds))
        if measured is not None:
            icc = measured
    known = (info.shape in ("rate", "mean") and info.name != "cost_usd"
             and (info.name in SERIES_METRICS or info.name in check_kinds))
    if not known:
        return None, "none", icc
    if history and tested is not None:
        if isinstance(question, Threshold):
            sample = build_sample(history, tested, info, check_kinds)
            values = sample.case_means() if sample.n_cases >= 2 else np.array([])
        else:
            b = build_sample(history, question.baseline, info, check_kinds)
            c = build_sample(history, question.candidate, info, check_kinds)
            shared = [name for name in b.cases if name in set(c.cases)]
            values = c.subset(shared).case_means() - b.subset(shared).case_means() if len(shared) >= 2 else np.array([])
        if len(values) >= 2 and float(np.std(values, ddof=1)) > 0:
            return float(np.std(values, ddof=1)), "history", icc
    if info.shape == "rate" and isinstance(question, Threshold):
        s = min(max(threshold_bound(question), 0.05), 0.95)
        return math.sqrt(s * (1 - s)), "prior", icc
    return (0.5 if info.shape == "rate" else 0.25), "prior", icc


def _weakest(question: Threshold, info: MetricInfo, history: Sequence[Attempt], kinds: Mapping[str, str]) -> str | None:
    """The tested variant the plan is for, when every variant must clear: the one observed furthest on the
    wrong side (ties by name), so the plan never depends on the order the history was read in."""
    means: dict[str, float] = {}
    for variant in sorted({a.variant for a in history}):
        sample = build_sample(history, variant, info, kinds)
        if sample.n_cases:
            means[variant] = float(np.mean(sample.case_means()))
    if not means:
        return None
    worse = (lambda v: means[v]) if question.above is not None else (lambda v: -means[v])
    return min(sorted(means), key=worse)


def observed_plan(question: Threshold | Pair, info: MetricInfo, margin: float, spread: float, icc: float,
                  repeats: int, history: Sequence[Attempt], kinds: Mapping[str, str], truth: Truth,
                  searched: Searched) -> ObservedPlan | None:
    """The cases that give 80% power at the rates observed so far (the history's own primary value, on the good
    side of the edge), by the same closed form and simulated search as the pre-registered figure."""
    found = _observed(question, info, history, kinds)
    if found is None:
        return None
    value, seen, base = found
    edge = truth["edge"]
    if isinstance(question, Threshold):
        good, gap = value, (value - edge if question.above is not None else edge - value)
    else:
        good, gap = value, value - edge
    shown = f"{value:+.2f}" if isinstance(question, Pair) else f"{value:.2f}" if info.shape == "rate" else f"{value:.3g}"
    where = f"at the rates observed so far ({_target(question)[0]} {shown} over {_cases_text(seen)}, the edge {edge:g})"
    if gap <= 0:
        return ObservedPlan(value, seen, edge, None, text=f"{where}, no number of cases confirms it: what was "
                            "observed is not past the edge")
    closed = max(2, math.ceil(((Z + Z_POWER) * spread / gap) ** 2 * design_effect(repeats, icc) / repeats))
    at = dict(truth, value=min(max(good, 0.005), 0.995) if info.shape == "rate" and isinstance(question, Threshold)
              else good)
    if base is not None:
        at["base"] = min(max(base, 0.02), 0.98)
        if info.shape == "rate":     # room for the observed difference inside (0, 1)
            sign = orientation(at["direction"])
            room = (1 - at["base"]) if sign > 0 else at["base"]
            at["value"] = min(at["value"], 0.98 * room)
    cases, power = searched(at, closed)
    if cases is None and closed > MAX_SIMULATED_CASES:
        return ObservedPlan(value, seen, edge, closed, None, closed,
                            text=f"{where}, about {closed} cases give an {POWER:.0%} chance to confirm (closed form: "
                                 f"past the {MAX_SIMULATED_CASES} cases the search tries)")
    if cases is None or power is None:  # the closed form alone can be many times too few for these intervals
        return ObservedPlan(value, seen, edge, None, None, closed, search_pending=True,
                            text=f"{where}, `aqven plan` gives the cases for an {POWER:.0%} chance to confirm (a "
                                 "simulated search: the closed form is too optimistic for these intervals to say)")
    if power < POWER:
        return ObservedPlan(value, seen, edge, cases, power, closed, capped=True,
                            text=f"{where}, the simulated search reached its cap, {cases} cases, with a {power:.0%} "
                                 "chance to confirm: more cases are needed")
    return ObservedPlan(value, seen, edge, cases, power, closed,
                        text=f"{where}, about {cases} cases give an {POWER:.0%} chance to confirm (simulated)")


def _observed(question: Threshold | Pair, info: MetricInfo, history: Sequence[Attempt],
              kinds: Mapping[str, str]) -> tuple[float, int, float | None] | None:
    """(the primary's value, cases, the baseline's mean for a pair) from the history's samples."""
    if isinstance(question, Threshold):
        tested = question.variant or _weakest(question, info, history, kinds)
        sample = build_sample(history, tested, info, kinds) if tested is not None else None
        if sample is None or not sample.n_cases:
            return None
        return float(np.mean(sample.case_means())), sample.n_cases, None
    b = build_sample(history, question.baseline, info, kinds)
    c = build_sample(history, question.candidate, info, kinds)
    shared = [name for name in b.cases if name in set(c.cases)]
    if not shared:
        return None
    base = b.subset(shared).case_means()
    diff = c.subset(shared).case_means() - base
    sign = orientation(question.direction or info.direction)
    return sign * float(np.mean(diff)), len(shared), float(np.mean(base))


def search_inputs(question: Threshold | Pair, info: MetricInfo, repeats: int, truth: Truth, family: str, seed: int,
                  closed: int) -> str:
    """Everything the simulated search reads, as one canonical string: the cache key of its result."""
    inputs = {"version": SEARCH_VERSION, "series": SIMULATED_SERIES, "power": POWER, "limit": MAX_SIMULATED_CASES,
              "effect_sd": LOGIT_EFFECT_SD, "question": [type(question).__name__, dataclasses.asdict(question)],
              "info": dataclasses.asdict(info), "repeats": repeats, "truth": dict(truth), "family": family,
              "seed": seed, "closed": closed}
    return json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=repr)


def planning_truth(question: Threshold | Pair, info: MetricInfo, margin: float, spread: float, icc: float,
                   repeats: int, history: Sequence[Attempt], kinds: Mapping[str, str]) -> dict[str, Any]:
    """The truth the plan is powered for: one margin beyond the edge, on the good side."""
    case_sd = spread * math.sqrt(design_effect(repeats, icc) / repeats)
    if isinstance(question, Threshold):
        above = question.above is not None
        declared = threshold_bound(question)
        edge = declared + margin if above else declared - margin
        value = edge + margin if above else edge - margin
        if info.shape == "rate":  # keep the planned truth inside (0, 1)
            value = min(value, (edge + 1) / 2) if above else max(value, edge / 2)
        bounded = info.shape == "rate" or _bounded_history(history, info, kinds)
        skewed = not bounded and _positive_unbounded_history(history, info, kinds)
        return dict(edge=edge, value=value, icc=icc, case_sd=case_sd, bounded=bounded, skewed=skewed)
    edge = margin if question.kind == "compare" else -margin
    value = edge + margin
    direction = question.direction or info.direction
    base = 0.5
    if history:
        sample = build_sample(history, question.baseline, info, kinds)
        if sample.n_cases and info.shape == "rate":
            base = float(np.clip(sample.case_means().mean(), 0.02, 0.98))
    if info.shape == "rate":  # room for the planned difference inside (0, 1)
        sign = orientation(direction)
        room = (1 - base) if sign > 0 else base
        value = min(value, 0.9 * room) if value > 0 else value
    bounded = info.shape == "rate" or _bounded_history(history, info, kinds)
    return dict(edge=edge, value=value, icc=icc, case_sd=case_sd, base=base, direction=direction, bounded=bounded)


def _bounded_history(history: Sequence[Attempt], info: MetricInfo, kinds: Mapping[str, str]) -> bool:
    """Score checks are planned as [0, 1] judge scores unless history shows values outside."""
    if info.shape != "mean" or info.name not in kinds:
        return False
    scores = [v.value for a in history for c, v in a.checks.items() if c == info.name and v.value is not None]
    return all(0.0 <= s <= 1.0 for s in scores)


def _positive_unbounded_history(history: Sequence[Attempt], info: MetricInfo, kinds: Mapping[str, str]) -> bool:
    """Whether the verdict will use the skewness-corrected t (samples.positive_unbounded) for this mean."""
    if info.shape != "mean":
        return False
    if info.unit in ("usd", "ms"):
        return True
    scores = [v.value for a in history for c, v in a.checks.items() if c == info.name and v.value is not None]
    return info.unit == "score" and bool(scores) and min(scores) >= 0.0 and max(scores) > 1.0
