"""Two variants on the same cases: compare / noninferior primaries and guardrails (§11.1-11.2).

Every pair estimate is oriented so that positive means "candidate better". Relative guardrails are
decided on a linear contrast against 0 (rates: M2 on p_c - (1-m) p_b; means: paired t on
m_c - (1-m) m_b; lower-is-better mirrored as (1+m) theta_b - theta_c) or, for ratios and quantiles,
on the log ratio against log(1-m) or -log(1+m).
"""

from __future__ import annotations

import math

import numpy as np

from . import betting, intervals
from .estimates import RESAMPLES, degenerate, hull, stat_seed, with_hull
from .model import Cell, Estimate, Pair, SeriesFacts
from .samples import LOWER, AttemptTable, Sample, bounded_unit, metric_info
from .verdicts import _decided_by, _no_point_pass, interval_verdict

MIN_PAIR_CASES = 2


def pair_rate_interval(kc, nc, kb, nb, sign: float, scale_b: float, family: str):
    """Paired rates, vectorised: M2 on the good-direction contrast, hulled with betting under "robust".

    Contrast per case: m_c - scale_b * m_b (higher is better) or scale_b * m_b - m_c (lower).
    Cases must already be in keyed-hash order. Returns (value, low, high, low_reliability).
    """
    mb = np.asarray(kb, float) / np.asarray(nb, float)
    mc = np.asarray(kc, float) / np.asarray(nc, float)
    if sign > 0:
        value, low, high, flag = intervals.m2(kc, nc, kb, nb, 1.0, scale_b)
        per_case, span = mc - scale_b * mb, (-scale_b, 1.0)
    else:
        value, low, high, flag = intervals.m2(kb, nb, kc, nc, scale_b, 1.0)
        per_case, span = scale_b * mb - mc, (-1.0, scale_b)
    if family == "robust":
        low, high = hull(low, high, *betting.interval_on(per_case, *span))
    return value, low, high, flag


def paired_mean_interval(per_case, span: tuple[float, float], family: str, bounded: bool):
    """Paired t on per-case contrasts, vectorised; hulled with betting when the contrast is bounded."""
    value, low, high, _ = intervals.t_mean(per_case)
    if family == "robust" and bounded:
        low, high = hull(low, high, *betting.interval_on(per_case, *span))
    return value, low, high


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
) -> Estimate:
    """The candidate's advantage on one metric, with the §4.4 degenerate guards in their order."""
    info = base.info
    relative = relative_margin is not None
    method = _method(info.shape, relative)
    unit = "log_ratio" if relative and info.shape in ("ratio", "quantile") else info.unit
    base, cand = aligned(base, cand)
    cases = base.n_cases
    attempts = base.n_attempts + cand.n_attempts
    sign = -1.0 if direction == LOWER else 1.0

    if cases == 0 or (info.shape == "ratio" and (base.pass_counts().sum() <= 0 or cand.pass_counts().sum() <= 0)):
        return degenerate("no_data", method, cases, attempts, unit)
    if info.shape == "quantile" and min(base.n_attempts, cand.n_attempts) < info.min_attempts:
        return degenerate("too_few_attempts", method, cases, attempts, unit)
    if cases < MIN_PAIR_CASES:
        return degenerate("too_few_cases", method, cases, attempts, unit)
    if info.shape in ("rate", "mean"):
        mb, mc = base.case_means(), cand.case_means()
        if info.shape == "rate":
            every = np.concatenate([mb, mc])
            if np.all(every == 0) or np.all(every == 1):
                return degenerate("uninformative", method, cases, attempts, unit, value=0.0)
        if np.array_equal(mb, mc):
            return degenerate("no_discordance", method, cases, attempts, unit, value=0.0)
        return _mean_like(base, cand, mb, mc, sign, relative_margin, method, unit, salt, family, info.shape)
    if info.shape == "ratio":
        return _ratio(base, cand, sign, relative, method, unit, cases, attempts)
    seed = stat_seed(salt, info.name, *names, data=(base, cand))
    return _quantile(base, cand, sign, relative, method, unit, cases, attempts, seed, resamples)


def _mean_like(base, cand, mb, mc, sign, margin, method, unit, salt, family, shape) -> Estimate:
    cases = len(mb)
    attempts = base.n_attempts + cand.n_attempts
    # good-direction contrast per case: cand - scale * base (higher) or scale * base - cand (lower)
    if margin is None:
        scale_b = 1.0
    else:
        scale_b = (1 - margin) if sign > 0 else (1 + margin)
    if sign > 0:
        per_case = mc - scale_b * mb
        lo_span, hi_span = -scale_b, 1.0
    else:
        per_case = scale_b * mb - mc
        lo_span, hi_span = -1.0, scale_b
    if shape == "rate":
        kb, nb, kc, nc = base.sums(), base.counts(), cand.sums(), cand.counts()
        if sign > 0:
            value, low, high, flag = intervals.m2(kc, nc, kb, nb, 1.0, scale_b)
        else:
            value, low, high, flag = intervals.m2(kb, nb, kc, nc, scale_b, 1.0)
        reliability = "low" if flag else "ok"
        n_eff = float(cases)
        bounded = True
    else:
        value, low, high, _ = intervals.t_mean(per_case)
        reliability = "degenerate" if float(np.ptp(per_case)) == 0.0 else ("low" if cases < 30 else "ok")
        n_eff = float(cases)
        bounded = bounded_unit(base) and bounded_unit(cand)
    bet = None
    if family == "robust" and bounded:
        order = np.array(betting.case_order(salt, base.cases), dtype=int)
        bet = betting.interval_on(per_case[order], lo_span, hi_span)
    return with_hull(value, low, high, method=method, cases=cases, attempts=attempts, n_eff=n_eff,
                     reliability=reliability, unit=unit, family=family, bet=bet)


def _ratio(base, cand, sign, relative, method, unit, cases, attempts) -> Estimate:
    yb, xb, yc, xc = base.sums(), base.pass_counts(), cand.sums(), cand.pass_counts()
    if relative and (yb.sum() <= 0 or yc.sum() <= 0):
        return degenerate("no_data", method, cases, attempts, unit)
    est, low, high = intervals.paired_ratio(yc, xc, yb, xb, log=relative)
    value, low, high = sign * est, min(sign * low, sign * high), max(sign * low, sign * high)
    return with_hull(value, low, high, method=method, cases=cases, attempts=attempts, n_eff=float(cases),
                     reliability="low" if cases < 30 else "ok", unit=unit, family="model", bet=None)


def m6(base: Sample, cand: Sample, q: float, seed: int, resamples: int, log: bool):
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
    return np.log(qc / qb) if log else qc - qb


def _quantile(base, cand, sign, relative, method, unit, cases, attempts, seed, resamples) -> Estimate:
    q = base.info.quantile
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


def _cell(metric, role, question: Pair, direction, margin, relative, estimate, edge) -> Cell:
    verdict = _no_point_pass(estimate, interval_verdict(estimate.low, estimate.high, edge))
    return Cell(
        metric=metric, role=role, variant=question.candidate, baseline=question.baseline, direction=direction,
        bound=None, threshold=None, margin=margin, relative=relative, estimate=estimate, verdict=verdict,
        edge=edge, decided_by=_decided_by(estimate, verdict, True),
    )


def pair_cells(question: Pair, table: AttemptTable, facts: SeriesFacts) -> tuple[list[Cell], list[Cell]]:
    kinds = facts.check_kinds
    names = (question.baseline, question.candidate)

    def samples(metric):
        info = metric_info(metric, kinds)
        return table.sample(question.baseline, info), table.sample(question.candidate, info), info

    base, cand, info = samples(question.primary)
    direction = question.direction or info.direction
    estimate = pair_estimate(base, cand, direction, facts.salt, facts.family, None, names)
    edge = question.margin if question.kind == "compare" else -question.margin
    primary = _cell(question.primary, "primary", question, direction, question.margin, False, estimate, edge)
    guards = []
    for guard in question.guardrails:
        base, cand, info = samples(guard.metric)
        g_direction = guard.direction or info.direction
        if guard.relative:
            estimate = pair_estimate(base, cand, g_direction, facts.salt, facts.family, guard.margin, names)
            edge = relative_edge(g_direction, guard.margin) if estimate.unit == "log_ratio" else 0.0
        else:
            estimate = pair_estimate(base, cand, g_direction, facts.salt, facts.family, None, names)
            edge = -guard.margin
        guards.append(_cell(guard.metric, "guardrail", question, g_direction, guard.margin, guard.relative,
                            estimate, edge))
    return [primary], guards
