"""Data-generating processes of statistics.md §4-§6 for the validation tests (seeded, vectorised)."""

import numpy as np
from scipy import special, stats

from pytest_aqven.stats.plan import beta_binomial_rates, logit_location

GH_NODES, GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(80)
GH_WEIGHTS = GH_WEIGHTS / np.sqrt(2 * np.pi)


def beta_binomial(rng, mu, rho, series, cases, repeats):
    """(k, n) of shape (series, cases): case rates Beta with mean mu and ICC rho, binomial attempts."""
    rates = beta_binomial_rates(rng, mu, rho, (series, cases))
    k = rng.binomial(repeats, rates).astype(float)
    return k, np.full_like(k, float(repeats))


def hard_case_mixture(rng, share, p_hard, p_good, series, cases, repeats):
    """Each case is hard (rate p_hard) with probability `share`, else p_good. Returns (k, n, mean)."""
    hard = rng.random((series, cases)) < share
    k = rng.binomial(repeats, np.where(hard, p_hard, p_good)).astype(float)
    return k, np.full_like(k, float(repeats)), share * p_hard + (1 - share) * p_good


def logit_pair(rng, p_b, p_c, sd_case, sd_effect, series, cases, repeats):
    """statistics.md §5.2 DGP with locations solved so the population means are exactly p_b and p_c."""
    a_b = logit_location(p_b, sd_case)
    a_c = logit_location(p_c, float(np.hypot(sd_case, sd_effect)))
    theta = rng.normal(0, sd_case, (series, cases))
    u = rng.normal(0, sd_effect, (series, cases))
    n = np.full((series, cases), float(repeats))
    kb = rng.binomial(repeats, special.expit(a_b + theta)).astype(float)
    kc = rng.binomial(repeats, special.expit(a_c + theta + u)).astype(float)
    return kb, kc, n


def lognormal_mixture_quantile(q, sigma_c, sigma_w, location=7.0):
    """q-quantile of exp(location + a + e), a ~ N(0, sigma_c^2), e ~ N(0, sigma_w^2), attempt-pooled."""
    total = np.hypot(sigma_c, sigma_w)
    return float(np.exp(location + total * stats.norm.ppf(q)))


def mixture_cdf_quantile(q, cdf, lo, hi):
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def tails(low, high, truth):
    """(coverage, P(low > truth), P(high < truth)) over simulated series."""
    over = float(np.mean(low > truth))
    under = float(np.mean(high < truth))
    return 1 - over - under, over, under


def ceiling_scores(rng, series, cases, repeats, share=0.04, top=0.95):
    """A 1..5 judge at its ceiling: a case is hard with probability `share` and always scores 1, else each
    attempt scores 5 with probability `top` and 4 otherwise. Returns (scores (series, cases, repeats), mean):
    4.792 at the defaults."""
    hard = rng.random((series, cases, 1)) < share
    scores = np.where(hard, 1.0, np.where(rng.random((series, cases, repeats)) < top, 5.0, 4.0))
    return scores, share * 1.0 + (1 - share) * (4.0 + top)


def broken_cases(rng, share, series, cases, repeats):
    """The baseline passes every attempt; the candidate fails every attempt of a hidden `share` of cases
    and passes elsewhere, so the variants agree on every case with probability (1 - share)^C and the
    difference is -share. Returns (kb, kc, n)."""
    n = np.full((series, cases), float(repeats))
    kc = np.where(rng.random((series, cases)) < share, 0.0, n)
    return n.copy(), kc, n
