"""Two variants on the same cases: compare / noninferior primaries and guardrails (§11.1-11.2).

Every pair estimate is oriented so that positive means "candidate better". Relative guardrails are
decided on a linear contrast against 0 (rates: M2 on p_c - (1-m) p_b; means: paired t on
m_c - (1-m) m_b; lower-is-better mirrored as (1+m) theta_b - theta_c) or, for ratios and quantiles,
on the log ratio against log(1-m) or -log(1+m).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import numpy.typing as npt

from . import betting, intervals
from .edges import decided_by, interval_verdict, no_point_pass, without_candidate_high
from .estimates import RESAMPLES, Interval, degenerate, in_order, stat_seed, usable_bound, with_hull
from .model import Cell, Estimate, Guardrail, Pair, SeriesFacts
from .samples import LOWER, MetricInfo, Sample, SampleTable, Scale, bounded_scale, metric_info

MIN_PAIR_CASES = 2


def orientation(direction: str) -> float:
    """+1 when higher is better, -1 when lower is: every pair estimate is on the good-direction scale."""
    return -1.0 if direction == LOWER else 1.0


def contrast_scale(sign: float, relative_margin: float | None) -> float:
    """The baseline's factor in the good-direction contrast: 1, or for a relative margin m the claim's
    (1 - m) when higher is better (p_c - (1 - m) p_b) and (1 + m) when lower is ((1 + m) p_b - p_c)."""
    if relative_margin is None:
        return 1.0
    return (1 - relative_margin) if sign > 0 else (1 + relative_margin)


def contrast(mc: np.ndarray, mb: np.ndarray, sign: float, scale_b: float,
             scale: Scale = (0.0, 1.0)) -> tuple[np.ndarray, Scale]:
    """Per-case good-direction contrast of case means and the range it lies in when they lie in `scale`
    [lo, hi]: mc - scale_b * mb in [lo - scale_b hi, hi - scale_b lo] (higher is better), scale_b * mb - mc
    in [scale_b lo - hi, scale_b hi - lo] (lower); on [0, 1]: [-scale_b, 1] and [-1, scale_b]."""
    lo, hi = scale
    if sign > 0:
        return mc - scale_b * mb, (lo - scale_b * hi, hi - scale_b * lo)
    return scale_b * mb - mc, (scale_b * lo - hi, scale_b * hi - lo)


def pair_rate_interval(kc: npt.ArrayLike, nc: npt.ArrayLike, kb: npt.ArrayLike, nb: npt.ArrayLike, sign: float,
                       scale_b: float, family: str,
                       order: np.ndarray | None = None) -> Interval:
    """Paired rates: M2 on the good-direction contrast, hulled under "robust" with the betting interval
    over the per-case contrast taken in `order` (None: as given)."""
    if sign > 0:
        value, low, high, flag = intervals.m2(kc, nc, kb, nb, 1.0, scale_b)
    else:
        value, low, high, flag = intervals.m2(kb, nb, kc, nc, scale_b, 1.0)
    per_case, span = contrast(np.asarray(kc, float) / np.asarray(nc, float),
                              np.asarray(kb, float) / np.asarray(nb, float), sign, scale_b)
    low, high = np.clip(low, *span), np.clip(high, *span)
    if family != "robust":
        return Interval(value, low, high, flag=flag)
    return Interval(value, low, high, betting.interval_on(in_order(per_case, order), *span), flag=flag)


def paired_mean_interval(mc: np.ndarray, mb: np.ndarray, sign: float, scale_b: float, family: str,
                         scale: Scale | None, order: np.ndarray | None = None) -> Interval:
    """Paired means: t on the per-case good-direction contrast. When the case means lie in a known
    `scale`, clipped to the contrast's range and, under "robust", hulled with the betting interval on it."""
    per_case, span = contrast(mc, mb, sign, scale_b, scale or (0.0, 1.0))
    value, low, high, _ = intervals.t_mean(per_case)
    if scale is None:
        return Interval(value, low, high)
    low, high = np.clip(low, *span), np.clip(high, *span)
    if family != "robust":
        return Interval(value, low, high)
    return Interval(value, low, high, betting.interval_on(in_order(per_case, order), *span))


def paired_ratio_interval(yc: np.ndarray, xc: np.ndarray, yb: np.ndarray, xb: np.ndarray, sign: float,
                          log: bool) -> Interval:
    """cost_of_pass of two variants: the paired linearised R_c - R_b, or log(R_c / R_b) for a relative
    margin, on the good-direction scale."""
    est, low, high = intervals.paired_ratio(yc, xc, yb, xb, log=log)
    return Interval(sign * est, np.minimum(sign * low, sign * high), np.maximum(sign * low, sign * high))


def no_interval(mb: npt.ArrayLike, mc: npt.ArrayLike, shape: str) -> np.ndarray:
    """The §4.4 guards of paired case means (cases on the last axis): "uninformative" when every case of
    a rate passes, or every case fails, for both variants; "no_discordance" when the variants agree on
    every case; "" when an interval is computed."""
    mb, mc = np.asarray(mb, dtype=float), np.asarray(mc, dtype=float)
    agree = np.all(mb == mc, axis=-1)
    if shape != "rate":
        return np.where(agree, "no_discordance", "")
    every = np.concatenate([mb, mc], axis=-1)
    uninformative = np.all(every == 0, axis=-1) | np.all(every == 1, axis=-1)
    return np.where(uninformative, "uninformative", np.where(agree, "no_discordance", ""))


def pair_scale(base: Sample, cand: Sample) -> Scale | None:
    """The scale both variants' values lie in, or None."""
    scale = bounded_scale(base)
    return scale if scale is not None and bounded_scale(cand) == scale else None


def agreement_bound(cases: npt.ArrayLike, scale: Scale = (0.0, 1.0)) -> np.ndarray:
    """The exact bound on |difference| when the variants agree on every one of `cases` cases: were a
    share q of cases discordant, all agreeing has chance (1 - q)^C, below alpha/2 for q > 1 - (alpha/2)^(1/C),
    and |difference| <= q (hi - lo). 0.028 at 129 cases on a rate; distribution-free, like the betting hull."""
    low, high = scale
    bound: np.ndarray = (high - low) * -np.expm1(np.log(intervals.ALPHA / 2) / np.asarray(cases, dtype=float))
    return bound


def aligned(base: Sample, cand: Sample) -> tuple[Sample, Sample]:
    """Only cases with included attempts for both variants, in the baseline's order."""
    if base.cases == cand.cases:
        return base, cand
    theirs = set(cand.cases)
    shared = [name for name in base.cases if name in theirs]
    return base.subset(shared), cand.subset(shared)


def _method(shape: str, relative: bool) -> str:
    if shape == "rate":
        return "M2-contrast" if relative else "M2"
    if shape == "mean":
        return "paired-t-contrast" if relative else "paired-t"
    if shape == "ratio":
        return "paired-log-ratio" if relative else "paired-linearised-ratio"
    return "M6-log-ratio" if relative else "M6"


def relative_edge(direction: str, margin: float) -> float:
    """Edge of a relative claim on the good-direction log-ratio scale."""
    if direction == LOWER:
        return -math.log1p(margin)
    return math.log(1 - margin) if margin < 1 else -math.inf


def pair_estimate(
    base: Sample,
    cand: Sample,
    direction: str,
    salt: str,
    family: str,
    relative_margin: float | None = None,
    names: tuple[str, str] = ("", ""),
    resamples: int = RESAMPLES,
    cost_bound: float | None = None,
) -> Estimate:
    """The candidate's advantage on one metric, with the §4.4 degenerate guards in their order.
    `cost_bound`: the most one attempt can cost, when known (cost_usd only; ignored if a cost passes it)."""
    info = base.info
    relative = relative_margin is not None
    method = _method(info.shape, relative)
    unit = "log_ratio" if relative and info.shape in ("ratio", "quantile") else info.unit
    base, cand = aligned(base, cand)
    cases = base.n_cases
    attempts = base.n_attempts + cand.n_attempts
    sign = orientation(direction)

    if cases == 0 or (info.shape == "ratio" and (base.pass_counts().sum() <= 0 or cand.pass_counts().sum() <= 0)):
        return degenerate("no_data", method, cases, attempts, unit)
    if info.shape == "quantile" and min(base.n_attempts, cand.n_attempts) < info.min_attempts:
        return degenerate("too_few_attempts", method, cases, attempts, unit)
    if cases < MIN_PAIR_CASES:
        return degenerate("too_few_cases", method, cases, attempts, unit)
    known = usable_bound(cost_bound, family, base, cand) if info.unit == "usd" else None    # a cost's, if it held
    if info.shape in ("rate", "mean"):
        mb, mc = base.case_means(), cand.case_means()
        reason = str(no_interval(mb, mc, info.shape))
        scale = pair_scale(base, cand)
        if reason and relative_margin is None and scale is not None:
            bound = float(agreement_bound(cases, scale))
            return Estimate(value=0.0, low=-bound, high=bound, method="exact-agreement", cases=cases,
                            attempts=attempts, n_eff=float(cases), unit=unit, family=family, low_from="exact",
                            high_from="exact", model_low=-bound, model_high=bound)
        if reason:
            return degenerate(reason, method, cases, attempts, unit, value=0.0)
        return _mean_like(base, cand, mb, mc, sign, relative_margin, method, unit, salt, family, info.shape, known)
    if info.shape == "ratio":
        estimate = _ratio(base, cand, sign, relative, method, unit, cases, attempts)
        # the paired ratio keeps its interval; a known bound rules out runaways past it (docs/statistics.md)
        return estimate if known is None else dataclasses.replace(estimate, cost_bound=known)
    seed = stat_seed(salt, info.name, *names, data=(base, cand))
    return _quantile(base, cand, sign, relative, method, unit, cases, attempts, seed, resamples)


def _mean_like(base: Sample, cand: Sample, mb: np.ndarray, mc: np.ndarray, sign: float, margin: float | None,
               method: str, unit: str, salt: str, family: str, shape: str, cost_bound: float | None) -> Estimate:
    cases = len(mb)
    attempts = base.n_attempts + cand.n_attempts
    scale_b = contrast_scale(sign, margin)
    order = np.array(betting.case_order(salt, base.cases), dtype=int)
    if shape == "rate":
        iv = pair_rate_interval(cand.sums(), cand.counts(), base.sums(), base.counts(), sign, scale_b, family, order)
        reliability = "low" if iv.flag else "ok"
    else:
        scale = (0.0, cost_bound) if cost_bound is not None else pair_scale(base, cand)   # a cost bound bounds it
        iv = paired_mean_interval(mc, mb, sign, scale_b, family, scale, order)
        per_case, _ = contrast(mc, mb, sign, scale_b)
        reliability = "degenerate" if float(np.ptp(per_case)) == 0.0 else ("low" if cases < 30 else "ok")
    return with_hull(iv.value, iv.model_low, iv.model_high, method=method, cases=cases, attempts=attempts,
                     n_eff=float(cases), reliability=reliability, unit=unit, family=family, bet=iv.bet,
                     cost_bound=cost_bound)


def _ratio(base: Sample, cand: Sample, sign: float, relative: bool, method: str, unit: str, cases: int,
           attempts: int) -> Estimate:
    yb, xb, yc, xc = base.sums(), base.pass_counts(), cand.sums(), cand.pass_counts()
    if relative and (yb.sum() <= 0 or yc.sum() <= 0):
        return degenerate("no_data", method, cases, attempts, unit)
    iv = paired_ratio_interval(yc, xc, yb, xb, sign, relative)
    return with_hull(iv.value, iv.model_low, iv.model_high, method=method, cases=cases, attempts=attempts,
                     n_eff=float(cases), reliability="low" if cases < 30 else "ok", unit=unit, family="model",
                     bet=None)


def m6(base: Sample, cand: Sample, q: float, seed: int, resamples: int, log: bool) -> np.ndarray:
    """M6: paired cluster bootstrap (case indices drawn once for both arms), percentile interval.

    Returns the bootstrap replicates of q_c - q_b (or log(q_c / q_b)).
    """
    cases = base.n_cases
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, cases, size=(resamples, cases))
    weights = intervals.case_weights(idx, cases)
    reps = []
    for arm in (cand, base):
        reps.append(intervals.bootstrap_quantiles(arm.flat, arm.case_index, cases, q, weights))
    qc, qb = reps
    replicates: np.ndarray = np.log(qc / qb) if log else qc - qb
    return replicates


def _quantile(base: Sample, cand: Sample, sign: float, relative: bool, method: str, unit: str, cases: int,
              attempts: int, seed: int, resamples: int) -> Estimate:
    q = base.info.quantile
    assert q is not None, "a quantile metric's info names its quantile"
    point_c = float(np.quantile(cand.flat, q))
    point_b = float(np.quantile(base.flat, q))
    if relative and (point_c <= 0 or point_b <= 0 or min(base.flat.min(), cand.flat.min()) <= 0):
        return degenerate("no_data", method, cases, attempts, unit)
    reps = sign * m6(base, cand, q, seed, resamples, relative)
    low, high = np.quantile(reps, [0.025, 0.975])
    value = sign * (math.log(point_c / point_b) if relative else point_c - point_b)
    return with_hull(value, low, high, method=method, cases=cases, attempts=attempts, n_eff=float(cases),
                     reliability="low" if cases < 12 else "ok", unit=unit, family="model", bet=None,
                     seed=seed, resamples=resamples)


def primary_edge(question: Pair) -> float:
    """The edge of a pair's primary on the good-direction scale: +margin (compare), -margin (noninferior)."""
    return question.margin if question.kind == "compare" else -question.margin


def guardrail_edge(guard: Guardrail, direction: str, unit: str) -> float:
    """A guardrail is a noninferiority claim: -margin; relative, 0 on the linear contrast, or the relative
    edge on the log ratio (ratios and quantiles, whose estimate's unit is log_ratio)."""
    if not guard.relative:
        return -guard.margin
    return relative_edge(direction, guard.margin) if unit == "log_ratio" else 0.0


def _cell(metric: str, role: str, question: Pair, direction: str, margin: float, relative: bool,
          estimate: Estimate, edge: float, open_above: bool = False) -> Cell:
    verdict = no_point_pass(estimate, interval_verdict(estimate.low, estimate.high, edge))
    if open_above:
        verdict = str(without_candidate_high(direction, verdict))
    return Cell(
        metric=metric, role=role, variant=question.candidate, baseline=question.baseline, direction=direction,
        bound=None, threshold=None, margin=margin, relative=relative, estimate=estimate, verdict=verdict,
        edge=edge, decided_by=decided_by(estimate, verdict, True),
    )


def pair_cells(question: Pair, table: SampleTable, facts: SeriesFacts) -> tuple[list[Cell], list[Cell]]:
    names = (question.baseline, question.candidate)

    def samples(metric: str) -> tuple[Sample, Sample, MetricInfo]:
        info = metric_info(metric, facts.check_kinds, facts.check_scales)
        return table.sample(question.baseline, info), table.sample(question.candidate, info), info

    def open_above(base: Sample, cand: Sample, info: MetricInfo) -> bool:
        """A cost (cost_usd, cost_of_pass) under the robust family with no usable per-attempt bound."""
        return (facts.family == "robust" and info.unit == "usd"
                and usable_bound(facts.cost_bound, facts.family, base, cand) is None)

    base, cand, info = samples(question.primary)
    direction = question.direction or info.direction
    estimate = pair_estimate(base, cand, direction, facts.salt, facts.family, None, names,
                             cost_bound=facts.cost_bound)
    primary = _cell(question.primary, "primary", question, direction, question.margin, False, estimate,
                    primary_edge(question), open_above(base, cand, info))
    guards = []
    for guard in question.guardrails:
        base, cand, info = samples(guard.metric)
        g_direction = guard.direction or info.direction
        relative_margin = guard.margin if guard.relative else None
        estimate = pair_estimate(base, cand, g_direction, facts.salt, facts.family, relative_margin, names,
                                 cost_bound=facts.cost_bound)
        guards.append(_cell(guard.metric, "guardrail", question, g_direction, guard.margin, guard.relative,
                            estimate, guardrail_edge(guard, g_direction, estimate.unit), open_above(base, cand, info)))
    return [primary], guards
