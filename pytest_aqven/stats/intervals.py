"""Model-based 95% intervals of statistics.md §11 (M1, M2, t, skew-corrected t, paired t, M5, M6, M7, log ratios).

The closed-form ones are vectorised over leading axes (shape (..., C), the last axis the cases), so
the validation tests and the launch plan's simulated search run the very same code as a verdict.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

ALPHA = 0.05
Z = 1.959963984540054
SPARSE_CASES = 5  # M1 sparse guard: fewer informative cases -> n_eff = C
LOW_N_EFF = 30  # NCHS-style reliability: n_eff below this is flagged "low"

Bounds = tuple[np.ndarray, np.ndarray, np.ndarray]  # (estimate, low, high) over the leading axes


# scipy.special's t and beta quantiles directly: the values of stats.t.ppf / stats.beta.ppf (which
# call them) without the distribution objects' argument handling, a few microseconds instead of ~30.
# Imported where used: scipy costs a --collect-only that decides nothing a third of its time.


def t_crit(df: npt.ArrayLike) -> np.ndarray:
    from scipy import special
    crit: np.ndarray = special.stdtrit(np.maximum(df, 1), 1 - ALPHA / 2)
    return crit


def m1(k: npt.ArrayLike, n: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Korn-Graubard interval on the effective sample size with df adjustment and sparse guard (§4.4).

    k, n: successes and attempts per case, shape (..., C). Returns (p, low, high, n_eff, low_reliability).
    """
    from scipy import special
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    cases = k.shape[-1]
    m = k / n
    p = m.mean(axis=-1)
    total = n.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        var = m.var(axis=-1, ddof=1) / cases if cases > 1 else np.full_like(p, np.nan)
        minority = np.where(p[..., None] >= 0.5, k < n, k > 0)
        informative = minority.sum(axis=-1)
        df = np.maximum(np.minimum(informative, cases) - 1, 1)
        n_eff = np.where(var > 0, p * (1 - p) / var, np.inf)
        adjust = (special.stdtrit(np.maximum(total - 1, 1), ALPHA / 2) / special.stdtrit(df, ALPHA / 2)) ** 2
        n_eff = n_eff * adjust
    n_eff = np.where(np.isnan(n_eff), cases, n_eff)
    n_eff = np.clip(n_eff, cases, total)
    n_eff = np.where(informative < SPARSE_CASES, float(cases), n_eff)
    # beta parameters kept positive; the p == 0 / p == 1 ends are set exactly below
    low = special.betaincinv(np.maximum(n_eff * p, 1e-300), n_eff * (1 - p) + 1, ALPHA / 2)
    high = special.betaincinv(n_eff * p + 1, np.maximum(n_eff * (1 - p), 1e-300), 1 - ALPHA / 2)
    low = np.where(p <= 0, 0.0, low)
    high = np.where(p >= 1, 1.0, high)
    flag = (informative < SPARSE_CASES) | (n_eff < LOW_N_EFF)
    return p, low, high, n_eff, flag


def t_mean(x: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean of case means +- t(C-1) * sd / sqrt(C). Returns (mean, low, high, half)."""
    x = np.asarray(x, dtype=float)
    cases = x.shape[-1]
    mean = x.mean(axis=-1)
    half = t_crit(cases - 1) * x.std(axis=-1, ddof=1) / np.sqrt(cases)
    return mean, mean - half, mean + half, half


def skewness(x: npt.ArrayLike) -> np.ndarray:
    """Adjusted sample skewness G1 over the last axis; 0 where undefined (fewer than 3 cases, no spread)."""
    x = np.asarray(x, dtype=float)
    cases = x.shape[-1]
    if cases < 3:
        return np.zeros(x.shape[:-1])
    c = x - x.mean(axis=-1, keepdims=True)
    m2 = (c * c).mean(axis=-1)
    m3 = (c * c * c).mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g1 = np.where(m2 > 0, m3 / np.sqrt(np.where(m2 > 0, m2, 1.0)) ** 3, 0.0)
    adjusted: np.ndarray = g1 * math.sqrt(cases * (cases - 1)) / (cases - 2)
    return adjusted


def _hall_inverse(v: np.ndarray, gamma: np.ndarray, cases: int) -> np.ndarray:
    """Inverse of Hall's (1992) monotone cubic g(t) = t + a t^2 + a^2 t^3 / 3 + b, where
    a = gamma / (3 sqrt C) and b = gamma / (6 sqrt C): g(T) of the studentized mean is
    t-distributed to second order when the cases have skewness gamma."""
    a = gamma / (3 * math.sqrt(cases))
    b = gamma / (6 * math.sqrt(cases))
    flat = np.abs(a) < 1e-12
    safe = np.where(flat, 1.0, a)
    return np.where(flat, v - b, (np.cbrt(1 + 3 * safe * (v - b)) - 1) / safe)


def skew_t_mean(x: npt.ArrayLike, right_skewed: bool = False) -> Bounds:
    """Skewness-corrected t on case means (Hall 1992 transformation, Willink 2005 form), vectorised.

    Both bounds invert Hall's transformation with the adjusted sample skewness G1. A sample that
    misses the far tail of a skewed metric understates its skewness, so for metrics that are
    positive and unbounded (`right_skewed`: cost, latency, open-scale scores) the upper bound also
    tries skewness max(G1, 2 CV), the skewness of a gamma variable with the sample's coefficient of
    variation, and keeps the higher bound. The lower bound never assumes skew the sample did not
    show. With no skew and no floor this is the t interval. Returns (mean, low, high).
    """
    x = np.asarray(x, dtype=float)
    cases = x.shape[-1]
    mean = x.mean(axis=-1)
    se = x.std(axis=-1, ddof=1) / math.sqrt(cases)
    q = t_crit(cases - 1)
    gamma = skewness(x)
    low = mean - se * _hall_inverse(q, gamma, cases)
    high = mean - se * _hall_inverse(-q, gamma, cases)
    if right_skewed:
        with np.errstate(divide="ignore", invalid="ignore"):
            cv = np.where(mean > 0, se * math.sqrt(cases) / np.where(mean > 0, mean, 1.0), 0.0)
        floored = np.maximum(gamma, 2 * cv)
        high = np.maximum(high, mean - se * _hall_inverse(-q, floored, cases))
    return mean, low, high


LOGNORMAL_DRAWS = 4000  # draws of the generalized pivot; the seed is fixed, so the bound is the data's alone
LOGNORMAL_SEED = 42


@lru_cache(maxsize=64)
def _pivot_draws(between_df: int, within_df: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pivot's standard normal and chi-square draws: they depend on the degrees of freedom alone."""
    rng = np.random.default_rng(LOGNORMAL_SEED)
    z = rng.standard_normal(LOGNORMAL_DRAWS)
    chi_between = rng.chisquare(between_df, LOGNORMAL_DRAWS)
    chi_within = rng.chisquare(within_df, LOGNORMAL_DRAWS) if within_df > 0 else np.ones(LOGNORMAL_DRAWS)
    return z, chi_between, chi_within


def lognormal_mean_high(case_logs: npt.ArrayLike, within_ss: npt.ArrayLike, within_df: int,
                        repeats: float) -> np.ndarray:
    """Upper 97.5% bound of E[exp(l)] when log cost l = a_case + e_attempt, both normal (one-way random
    effects): the generalized pivotal quantity of Krishnamoorthy & Mathew (2003), with the between- and
    within-case variances of the balanced one-way layout. Heavy right tails of costs (lognormal, sigma up
    to 2) are where the t family's upper bound falls short; this one keeps its 2.5% on them.

    case_logs: mean log cost per case, shape (..., C); within_ss: sum of squared deviations of log costs
    from their case's mean, shape (...); within_df: its degrees of freedom (0 with one attempt a case);
    repeats: attempts per case (their harmonic mean when unequal). A fixed seed: the same data, the same bound.
    """
    case_logs = np.asarray(case_logs, dtype=float)
    cases = case_logs.shape[-1]
    grand = case_logs.mean(axis=-1)
    between_ss = repeats * ((case_logs - grand[..., None]) ** 2).sum(axis=-1)
    z, chi_between, chi_within = _pivot_draws(cases - 1, within_df)
    g_between = np.asarray(between_ss)[..., None] / chi_between  # sigma_e^2 + R sigma_a^2
    if within_df > 0:
        g_within = np.asarray(within_ss)[..., None] / chi_within
        total = np.maximum(g_between - g_within, 0.0) / repeats + g_within
    else:
        total = g_between
    pivot = grand[..., None] - z * np.sqrt(g_between / (cases * repeats)) + total / 2
    high: np.ndarray = np.exp(np.quantile(pivot, 1 - ALPHA / 2, axis=-1))
    return high


def mover(est1: np.ndarray, low1: np.ndarray, high1: np.ndarray, est2: np.ndarray, low2: np.ndarray,
          high2: np.ndarray, r: np.ndarray) -> Bounds:
    """MOVER (Zou & Donner 2008) interval for est1 - est2 with correlation r between the estimators."""
    diff = est1 - est2
    a, b = est1 - low1, high2 - est2
    c, d = high1 - est1, est2 - low2
    low = diff - np.sqrt(np.maximum(a * a + b * b - 2 * r * a * b, 0.0))
    high = diff + np.sqrt(np.maximum(c * c + d * d - 2 * r * c * d, 0.0))
    return diff, low, high


def case_correlation(x: npt.ArrayLike, y: npt.ArrayLike) -> np.ndarray:
    """Correlation of two arms' case means over the same cases; 0 where undefined."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(den > 0, (xc * yc).sum(axis=-1) / den, 0.0)
    return r


def m2(k1: npt.ArrayLike, n1: npt.ArrayLike, k2: npt.ArrayLike, n2: npt.ArrayLike, scale1: float = 1.0,
       scale2: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """M2: MOVER over two M1 intervals for scale1*p1 - scale2*p2, paired by case (§5.1, §5.3).

    The scales give the relative-margin contrast p_c - (1-m) p_b without a ratio approximation.
    Returns (estimate, low, high, low_reliability).
    """
    p1, l1, h1, _, f1 = m1(k1, n1)
    p2, l2, h2, _, f2 = m1(k2, n2)
    r = case_correlation(np.asarray(k1) / np.asarray(n1), np.asarray(k2) / np.asarray(n2))
    diff, low, high = mover(scale1 * p1, scale1 * l1, scale1 * h1, scale2 * p2, scale2 * l2, scale2 * h2, r)
    return diff, low, high, f1 | f2


def woodruff(values: np.ndarray, case_index: np.ndarray, cases: int,
             q: float) -> tuple[float | None, float | None, int]:
    """M5: Woodruff interval for a pooled quantile with cluster-robust t(C-1) (§6.1).

    values: all attempts' values; case_index: their case (0..cases-1). Returns (low, high, n_above)
    where low/high are None when the inverted proportion leaves (0, 1], and n_above counts the cases
    with attempts above the quantile (the reliability signal).
    """
    order = np.sort(values)
    point = float(np.quantile(values, q, method="inverted_cdf"))
    below = np.bincount(case_index, weights=(values <= point).astype(float), minlength=cases)
    per_case = np.bincount(case_index, minlength=cases).astype(float)
    z = below / per_case
    se = z.std(ddof=1) / np.sqrt(cases)
    half = float(t_crit(cases - 1) * se)
    n_above = int(np.sum(below < per_case))
    low_p, high_p = q - half, q + half
    total = len(order)
    low = None if low_p <= 0 else float(order[max(int(np.ceil(low_p * total)) - 1, 0)])
    high = None if high_p > 1 else float(order[max(int(np.ceil(high_p * total)) - 1, 0)])
    return low, high, n_above


def ratio_linearised(y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ratio of sums sum(y)/sum(x) and its per-case linearised values g_i (§6.2)."""
    ratio = y.sum(axis=-1) / x.sum(axis=-1)
    g = (y - ratio[..., None] * x) / x.mean(axis=-1, keepdims=True)
    return ratio, g


def m7(y: npt.ArrayLike, x: npt.ArrayLike) -> Bounds:
    """M7: log-scale linearised interval for a ratio of case totals, t(C-1)."""
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    cases = y.shape[-1]
    ratio, g = ratio_linearised(y, x)
    se = g.std(axis=-1, ddof=1) / np.sqrt(cases)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = t_crit(cases - 1) * se / ratio
        low = np.where(ratio > 0, ratio * np.exp(-rel), 0.0)
        high = np.where(ratio > 0, ratio * np.exp(rel), 0.0)
    return ratio, low, high


def paired_ratio(y_c: npt.ArrayLike, x_c: npt.ArrayLike, y_b: npt.ArrayLike, x_b: npt.ArrayLike,
                 log: bool) -> Bounds:
    """Paired linearised interval for R_c - R_b (log=False) or log(R_c / R_b) (log=True)."""
    y_c, x_c, y_b, x_b = (np.asarray(a, dtype=float) for a in (y_c, x_c, y_b, x_b))
    cases = y_c.shape[-1]
    r_c, g_c = ratio_linearised(y_c, x_c)
    r_b, g_b = ratio_linearised(y_b, x_b)
    if log:
        z = g_c / r_c[..., None] - g_b / r_b[..., None]
        est = np.log(r_c) - np.log(r_b)
    else:
        z = g_c - g_b
        est = r_c - r_b
    # a few dear cases carry the totals: the t's degrees of freedom are those of z's variance,
    # 2 C / (kurtosis - 1) (Satterthwaite; C - 1 for normal z), and the spread at least the
    # delete-one-case jackknife's
    spread = z - z.mean(axis=-1, keepdims=True)
    square = spread * spread
    with np.errstate(divide="ignore", invalid="ignore"):
        kurtosis = cases * (square * square).sum(axis=-1) / square.sum(axis=-1) ** 2
        df = np.where(kurtosis > 1, 2 * cases / (kurtosis - 1), cases)
        totals = [a.sum(axis=-1, keepdims=True) - a for a in (y_c, x_c, y_b, x_b)]
        left_out = (np.log(totals[0] / totals[1]) - np.log(totals[2] / totals[3]) if log
                    else totals[0] / totals[1] - totals[2] / totals[3])
        jackknife = np.sqrt((cases - 1) * np.var(left_out, axis=-1))  # nan (a case carries every pass): unused
    se = np.fmax(z.std(axis=-1, ddof=1) / np.sqrt(cases), jackknife)  # fmax: nan loses
    half = t_crit(np.minimum(df, cases) - 1) * se
    return est, est - half, est + half


def case_weights(idx: np.ndarray, cases: int) -> np.ndarray:
    """W[b, i] = how many times resample b drew case i (float32 for the BLAS product)."""
    rows = idx.shape[0]
    offsets = (np.arange(rows) * cases)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=rows * cases).reshape(rows, cases).astype(np.float32)


def bootstrap_quantiles(values: np.ndarray, case_index: np.ndarray, cases: int, q: float,
                        weights: np.ndarray) -> np.ndarray:
    """Pooled inverted-CDF quantile of each cluster-bootstrap resample (rows of `weights`).

    Counts-matrix trick (§10): W[b, i] = times case i is drawn, cum[i, j] = attempts of case i at or
    below the j-th distinct value; the first value whose weighted count reaches q * attempts is the
    answer. Only a window of values is scanned: the span a pilot of 256 rows needs, padded, and
    widened until every row is answered inside it.
    """
    distinct, rank = np.unique(values, return_inverse=True)
    size = len(distinct)
    hist = np.zeros((cases, size), dtype=np.float32)
    np.add.at(hist, (case_index, rank), 1.0)
    cum = np.cumsum(hist, axis=1)
    target = q * (weights.astype(float) @ hist.sum(axis=1).astype(float)) - 1e-9 * values.size
    pilot = np.argmax(weights[:256] @ cum >= target[:256, None], axis=1)
    pad = max(8, int(0.25 * (pilot.max() - pilot.min())))
    while True:
        start, stop = max(int(pilot.min()) - pad, 0), min(int(pilot.max()) + pad + 1, size)
        counts = weights @ cum[:, start:stop]
        reached = counts >= target[:, None]
        inside = bool(np.all(reached[:, -1]))
        if start > 0:
            inside = inside and not np.any(weights @ cum[:, start - 1] >= target)
        if inside:
            answers: np.ndarray = distinct[start + np.argmax(reached, axis=1)]
            return answers
        pad *= 2
