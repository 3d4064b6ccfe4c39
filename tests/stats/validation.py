"""The validation grids of statistics.md §12 (V1-V9), as functions returning measured rows.

The tests assert each row against its band; `bench/validation_table.py` prints the same rows for
docs/statistics.md. Every grid is seeded, so a run is deterministic. Sizes are stated per grid.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from pytest_aqven.stats import betting, intervals
from pytest_aqven.stats.estimates import mean_interval, rate_interval
from pytest_aqven.stats.pairs import m6, pair_rate_interval, paired_mean_interval
from pytest_aqven.stats.samples import Sample, metric_info

from pytest_aqven.stats.plan import logit_location

from .sim import GH_NODES, GH_WEIGHTS, beta_binomial, hard_case_mixture, logit_pair, tails

S = 2000  # series per cell for the closed-form methods: MC error of a 2.5% tail is 0.0035


def bounds(interval):
    return interval.low, interval.high


def row(test, cell, low, high, truth, **extra):
    cov, over, under = tails(low, high, truth)
    return dict(test=test, cell=cell, coverage=cov, over=over, under=under, **extra)


def v1_rows(series=S):
    """M1, regular regime: 2 x 2 x 2 x 4 = 32 cells."""
    rows = []
    for cases in (30, 100):
        for repeats in (5, 20):
            for mu in (0.5, 0.8):
                for rho in (0.02, 0.1, 0.3, 0.6):
                    rng = np.random.default_rng([1, cases, repeats, int(mu * 100), int(rho * 100)])
                    k, n = beta_binomial(rng, mu, rho, series, cases, repeats)
                    _, low, high, _, _ = intervals.m1(k, n)
                    rows.append(row("V1", f"C={cases} R={repeats} mu={mu} rho={rho}", low, high, mu))
    return rows


def v2_rows(series=S):
    """M1 at the boundary: mu = 0.97, 3 x 2 x 4 smooth cells + 6 mixture cells (3% at p = 0.1)."""
    rows = []
    for cases in (12, 30, 100):
        for repeats in (5, 20):
            for rho in (0.02, 0.1, 0.3, 0.6):
                rng = np.random.default_rng([2, cases, repeats, int(rho * 100)])
                k, n = beta_binomial(rng, 0.97, rho, series, cases, repeats)
                _, low, high, _, _ = intervals.m1(k, n)
                rows.append(row("V2", f"C={cases} R={repeats} rho={rho}", low, high, 0.97,
                                width=float(np.mean(high - low))))
            rng = np.random.default_rng([22, cases, repeats])
            p_good = (0.97 - 0.03 * 0.1) / 0.97
            k, n, mu = hard_case_mixture(rng, 0.03, 0.1, p_good, series, cases, repeats)
            _, low, high, _, _ = intervals.m1(k, n)
            rows.append(row("V2", f"C={cases} R={repeats} mixture 3% at 0.1", low, high, mu,
                            width=float(np.mean(high - low))))
    return rows


MIXTURES = ((0.03, 0.1, 0.99), (0.05, 0.0, 0.98), (0.10, 0.2, 0.95))


def robust_mixture_rows(series=S):
    """Hard-case mixtures (a few % of cases at a low rate): M1 vs the robust hull. 5 x 2 x 3 cells."""
    rows = []
    for cases in (12, 20, 40, 60, 100):
        for repeats in (5, 20):
            for share, p_hard, p_good in MIXTURES:
                rng = np.random.default_rng([3, cases, repeats, int(share * 100)])
                k, n, mu = hard_case_mixture(rng, share, p_hard, p_good, series, cases, repeats)
                low, high = bounds(rate_interval(k, n, "model"))
                r_low, r_high = bounds(rate_interval(k, n, "robust"))
                cell = f"C={cases} R={repeats} {share:.0%} at {p_hard}, rest {p_good}"
                model = row("V2-mix", cell, low, high, mu)
                robust = row("V2-mix", cell, r_low, r_high, mu)
                rows.append(dict(robust, m1_over=model["over"], m1_under=model["under"]))
    return rows


def pooled_wilson_coverage(series=S):
    """V3: iid Wilson on all 240 attempts at 12 x 20, mu = 0.97, rho = 0.3."""
    rng = np.random.default_rng(4)
    k, n = beta_binomial(rng, 0.97, 0.3, series, 12, 20)
    successes, total = k.sum(axis=1), n.sum(axis=1)
    p = successes / total
    z = stats.norm.ppf(0.975)
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * np.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return row("V3", "C=12 R=20 mu=0.97 rho=0.3 pooled Wilson", centre - half, centre + half, 0.97)


V4_RATES = ((0.70, 0.75), (0.95, 0.97), (0.90, 0.85), (0.97, 0.95), (0.60, 0.60))


def v4_rows(series=S, repeats=10):
    """M2 paired binary, logit-normal DGP: 4 x 5 x 2 x 3 = 120 cells, R = 10."""
    rows = []
    for cases in (12, 30, 50, 100):
        for p_b, p_c in V4_RATES:
            for sd_case in (1.0, 2.5):
                for sd_effect in (0.0, 0.5, 0.8):
                    rng = np.random.default_rng([5, cases, int(p_b * 100), int(p_c * 100), int(sd_case * 10),
                                                 int(sd_effect * 10)])
                    kb, kc, n = logit_pair(rng, p_b, p_c, sd_case, sd_effect, series, cases, repeats)
                    low, high = bounds(pair_rate_interval(kc, n, kb, n, 1.0, 1.0, "model"))
                    rows.append(row("V4", f"C={cases} {p_b}->{p_c} sd_case={sd_case} sd_eff={sd_effect}",
                                    low, high, p_c - p_b, cases=cases, rates=(p_b, p_c)))
    return rows


def concentrated_harm_rows(series=S, repeats=10):
    """Noninferiority with the harm concentrated in a few cases, truth exactly at -margin.

    Baseline rate p on every case; the candidate fails a hidden share of cases completely and
    matches the baseline elsewhere, so Delta = -share * p. Robust must hold its tails; M2 need not.
    """
    rows = []
    for cases in (20, 40, 60, 100):
        for share, p in ((0.05, 0.95), (0.03, 0.97), (0.10, 0.9)):
            rng = np.random.default_rng([6, cases, int(share * 100)])
            broken = rng.random((series, cases)) < share
            n = np.full((series, cases), float(repeats))
            kb = rng.binomial(repeats, np.full((series, cases), p)).astype(float)
            kc = rng.binomial(repeats, np.where(broken, 0.0, p)).astype(float)
            truth = -share * p
            low, high = bounds(pair_rate_interval(kc, n, kb, n, 1.0, 1.0, "model"))
            r_low, r_high = bounds(pair_rate_interval(kc, n, kb, n, 1.0, 1.0, "robust"))
            model = row("V4-harm", "", low, high, truth)
            rows.append(dict(row("V4-harm", f"C={cases} {share:.0%} of cases broken, p={p}", r_low, r_high, truth),
                             m2_over=model["over"], m2_under=model["under"]))
    return rows


def v5_rows(series=S, repeats=10):
    """A/A and boundary truths through the verdict rule, both families, C in {12, 30, 100}.

    Returns P(confirmed) for: A/A compare margin 0 (each direction), NI with truth at -m, compare
    with truth at +m (m = 0.05), and an A/A paired t on bounded scores.
    """
    rows = []
    margin = 0.05
    for cases in (12, 30, 100):
        for family in ("robust", "model"):
            rng = np.random.default_rng([7, cases])
            kb, kc, n = logit_pair(rng, 0.8, 0.8, 1.5, 0.0, series, cases, repeats)
            low, high = bounds(pair_rate_interval(kc, n, kb, n, 1.0, 1.0, family))
            rows.append(dict(test="V5", cell=f"A/A rate C={cases} {family}", better=float(np.mean(low > 0)),
                             worse=float(np.mean(high < 0))))
            kb, kc, n = logit_pair(rng, 0.85, 0.85 - margin, 1.5, 0.5, series, cases, repeats)
            low, _ = bounds(pair_rate_interval(kc, n, kb, n, 1.0, 1.0, family))
            rows.append(dict(test="V5", cell=f"NI truth -m C={cases} {family}", confirmed=float(np.mean(low > -margin))))
            kb, kc, n = logit_pair(rng, 0.75, 0.75 + margin, 1.5, 0.5, series, cases, repeats)
            low, _ = bounds(pair_rate_interval(kc, n, kb, n, 1.0, 1.0, family))
            rows.append(dict(test="V5", cell=f"compare truth +m C={cases} {family}",
                             confirmed=float(np.mean(low > margin))))
            level = special.expit(rng.normal(0.5, 1.0, (series, cases)))
            sb = np.clip(level + rng.normal(0, 0.1, (series, cases)) / np.sqrt(repeats), 0, 1)
            sc = np.clip(level + rng.normal(0, 0.1, (series, cases)) / np.sqrt(repeats), 0, 1)
            low, high = bounds(paired_mean_interval(sc, sb, 1.0, 1.0, family, True))
            rows.append(dict(test="V5", cell=f"A/A score C={cases} {family}", better=float(np.mean(low > 0)),
                             worse=float(np.mean(high < 0))))
    return rows


def _lognormal_attempts(rng, sigma_c, sigma_w, series, cases, repeats, shift=0.0):
    """Attempts exp(a_i + shift + e_ij) with E[attempt | case] = exp(a_i + shift)."""
    a = rng.normal(0, sigma_c, (series, cases, 1))
    e = rng.normal(-sigma_w**2 / 2, sigma_w, (series, cases, repeats))
    return np.exp(a + shift + e), a


def v6_rows(series=S, repeats=5):
    """Means of case means, lognormal case means (sigma_c 0.5 and 1.0), C in {12, 30, 100}.

    Rows: the plain t on case means (the baseline that undercovers), the skewness-corrected t the
    verdict uses for positive unbounded metrics (`skew-t`), and the paired t on per-case differences.
    """
    rows = []
    for cases in (12, 30, 100):
        for sigma_c in (0.5, 1.0):
            rng = np.random.default_rng([8, cases, int(sigma_c * 10)])
            y, a = _lognormal_attempts(rng, sigma_c, 0.5, series, cases, repeats)
            truth = math.exp(sigma_c**2 / 2)
            means = y.mean(axis=2)
            _, low, high, _ = intervals.t_mean(means)
            rows.append(row("V6", f"t C={cases} sigma_c={sigma_c}", low, high, truth, cases=cases))
            low, high = bounds(mean_interval(means, "model", False, skewed=True))
            rows.append(row("V6", f"skew-t C={cases} sigma_c={sigma_c}", low, high, truth, cases=cases))
            tau, delta = 0.2, 0.1
            v = rng.normal(0, tau, (series, cases, 1))
            e = rng.normal(-0.125, 0.5, (series, cases, repeats))
            yc = np.exp(a + delta + v + e)
            d = yc.mean(axis=2) - means
            truth_d = truth * (math.exp(delta + tau**2 / 2) - 1)
            _, low, high, _ = intervals.t_mean(d)
            rows.append(row("V6", f"paired t C={cases} sigma_c={sigma_c}", low, high, truth_d, cases=cases))
    return rows


V6_SHAPES = (  # positive case-mean distributions other than the lognormal, with their means
    ("normal(10, 1)", lambda rng, shape: rng.normal(10, 1, shape), 10.0),
    ("uniform(0, 2)", lambda rng, shape: rng.uniform(0, 2, shape), 1.0),
    ("gamma(4)", lambda rng, shape: rng.gamma(4.0, 1.0, shape), 4.0),
    ("exponential", lambda rng, shape: rng.exponential(1.0, shape), 1.0),
    ("gamma(0.5)", lambda rng, shape: rng.gamma(0.5, 1.0, shape), 0.5),
    ("weibull(0.7)", lambda rng, shape: rng.weibull(0.7, shape), math.gamma(1 + 1 / 0.7)),
)


def v6_shape_rows(series=S):
    """The skewness-corrected t on other positive shapes (symmetric to strongly skewed), next to t."""
    rows = []
    for name, draw, truth in V6_SHAPES:
        for cases in (12, 30, 100):
            rng = np.random.default_rng([81, cases, len(name)])
            x = draw(rng, (series, cases))
            _, low, high, _ = intervals.t_mean(x)
            t_row = row("V6-shape", "", low, high, truth)
            low, high = bounds(mean_interval(x, "model", False, skewed=True))
            rows.append(dict(row("V6-shape", f"skew-t {name} C={cases}", low, high, truth, cases=cases),
                             t_coverage=t_row["coverage"], t_over=t_row["over"], t_under=t_row["under"]))
    return rows


def _cost_pass(rng, p_mean, series, cases, repeats, cost_factor=1.0, logit_shift=0.0):
    """Case pass rates logit-normal (sd 1), case cost levels lognormal, negatively tied to the rate."""
    a = logit_location(p_mean, 1.0)
    z = rng.normal(0, 1, (series, cases))
    w = rng.normal(0, 1, (series, cases))
    rate = special.expit(a + logit_shift + z)
    level = 0.01 * cost_factor * np.exp(0.5 * (-0.5 * z + math.sqrt(0.75) * w))
    costs = level[..., None] * np.exp(rng.normal(-0.045, 0.3, (series, cases, repeats)))
    passes = rng.binomial(repeats, rate).astype(float)
    return costs.sum(axis=2), passes, z, w


def v7_rows(series=S, repeats=5):
    """M7 (cost_of_pass) and the paired log ratio, pass rates 0.3-0.9, C in {12, 30, 100}."""
    rows = []
    mean_level = 0.01 * math.exp(0.125)  # E[exp(0.5 * N(0, 1))]
    for cases in (12, 30, 100):
        for p in (0.3, 0.6, 0.9):
            rng = np.random.default_rng([9, cases, int(p * 10)])
            y, x, z, w = _cost_pass(rng, p, series, cases, repeats)
            ok = x.sum(axis=1) > 0
            ratio, low, high = intervals.m7(y[ok], x[ok])
            rows.append(row("V7", f"M7 C={cases} p={p}", low, high, mean_level / p, cases=cases))
            # candidate: 30% dearer, +0.3 on the logit of every case
            a = logit_location(p, 1.0)
            rate_c = special.expit(a + 0.3 + z)
            level_c = 0.013 * np.exp(0.5 * (-0.5 * z + math.sqrt(0.75) * w))
            yc = (level_c[..., None] * np.exp(rng.normal(-0.045, 0.3, (series, cases, repeats)))).sum(axis=2)
            xc = rng.binomial(repeats, rate_c).astype(float)
            p_c = float(np.sum(GH_WEIGHTS * special.expit(a + 0.3 + GH_NODES)))
            truth = math.log(1.3 * mean_level / p_c) - math.log(mean_level / p)
            ok = (x.sum(axis=1) > 0) & (xc.sum(axis=1) > 0)
            _, low, high = intervals.paired_ratio(yc[ok], xc[ok], y[ok], x[ok], log=True)
            rows.append(row("V7", f"paired log ratio C={cases} p={p}", low, high, truth, cases=cases))
    return rows


def _latency_sample(values: np.ndarray, q: float) -> Sample:
    info = metric_info("latency_p95_ms" if q > 0.5 else "latency_p50_ms", {})
    return Sample.from_groups(info, [f"c{i}" for i in range(len(values))], list(values))


def v8_m5_rows(series=1000, repeats=10):
    """M5 Woodruff, p50 and p95, lognormal latency exp(7 + a + e), 1000 series per cell."""
    rows = []
    for q in (0.5, 0.95):
        for cases in (12, 30, 100):
            for sigma_c, sigma_w in ((0.5, 0.5), (1.0, 0.3)):
                rng = np.random.default_rng([10, int(q * 100), cases, int(sigma_c * 10)])
                lat = np.exp(7 + rng.normal(0, sigma_c, (series, cases, 1)) + rng.normal(0, sigma_w, (series, cases, repeats)))
                truth = math.exp(7 + math.hypot(sigma_c, sigma_w) * stats.norm.ppf(q))
                lows, highs, flagged = [], [], []
                case_index = np.repeat(np.arange(cases), repeats)
                for s in range(series):
                    low, high, n_above = intervals.woodruff(lat[s].ravel(), case_index, cases, q)
                    lows.append(-np.inf if low is None else low)
                    highs.append(np.inf if high is None else high)
                    flagged.append(n_above < 5 or (q >= 0.9 and cases < 30) or low is None or high is None)
                low, high, flagged = np.array(lows), np.array(highs), np.array(flagged)
                missed = (low > truth) | (high < truth)
                flagged_share = float(flagged[missed].mean()) if missed.any() else 1.0
                rows.append(row("V8", f"M5 p{int(q * 100)} C={cases} sigma_c={sigma_c} sigma_w={sigma_w}",
                                low, high, truth, cases=cases, q=q, sigma_c=sigma_c, flagged_misses=flagged_share))
    return rows


def v8_m6_rows(series=400, repeats=10, resamples=1000):
    """M6 paired cluster bootstrap of log(p95_c / p95_b): 400 series x 1000 resamples per cell.

    Pure scale shift (shared case effects, factor 1.2) and a heterogeneous shift (case-specific
    slowdowns, sd 0.3 on the log scale).
    """
    rows = []
    q, sigma_c, sigma_w, factor = 0.95, 0.5, 0.5, 1.2
    for cases, tau in ((12, 0.0), (30, 0.0), (100, 0.0), (30, 0.3), (100, 0.3)):
        rng = np.random.default_rng([11, cases, int(tau * 10)])
        a = rng.normal(0, sigma_c, (series, cases, 1))
        s = rng.normal(math.log(factor), tau, (series, cases, 1))
        base = np.round(np.exp(7 + a + rng.normal(0, sigma_w, (series, cases, repeats))))
        cand = np.round(np.exp(7 + a + s + rng.normal(0, sigma_w, (series, cases, repeats))))
        z = stats.norm.ppf(q)
        truth = math.log(factor) + z * (math.sqrt(sigma_c**2 + tau**2 + sigma_w**2) - math.hypot(sigma_c, sigma_w))
        lows, highs = [], []
        for i in range(series):
            reps = m6(_latency_sample(base[i], q), _latency_sample(cand[i], q), q, seed=i, resamples=resamples, log=True)
            lo, hi = np.quantile(reps, [0.025, 0.975])
            lows.append(lo)
            highs.append(hi)
        rows.append(row("V8", f"M6 log p95 ratio C={cases} shift sd={tau}", np.array(lows), np.array(highs), truth,
                        cases=cases))
    return rows


def betting_alone_rows(series=S):
    """The betting interval by itself (what the robust guarantee rests on), smooth and mixture cells."""
    rows = []
    for cases in (12, 30, 100):
        for mu, rho in ((0.5, 0.3), (0.9, 0.1), (0.97, 0.6)):
            rng = np.random.default_rng([12, cases, int(mu * 100)])
            k, n = beta_binomial(rng, mu, rho, series, cases, 10)
            low, high = betting.interval(k / n)
            rows.append(row("betting", f"C={cases} mu={mu} rho={rho}", low, high, mu))
    return rows


V9_ROWS = (  # statistics.md §8 table: (above, margin, rho, repeats, family); truth = above + 2 * margin
    (0.75, 0.05, 0.2, 10, "model"),
    (0.93, 0.02, 0.05, 20, "model"),
    (0.93, 0.02, 0.3, 20, "model"),
    (0.5, 0.1, 0.1, 5, "model"),
    (0.75, 0.05, 0.2, 10, "robust"),
    (0.5, 0.1, 0.1, 5, "robust"),
)


def v9_rows(series=S):
    """Planner vs brute force: power at the planned C (independent seed) and at C / 1.1."""
    from pytest_aqven.stats import Threshold, launch_plan  # noqa: PLC0415
    from pytest_aqven.stats.plan import planning_truth, simulated_power  # noqa: PLC0415

    rows = []
    for above, margin, rho, repeats, family in V9_ROWS:
        question = Threshold("promises", above=above, margin=margin)
        kinds = {"promises": "binary"}
        plan = launch_plan(question, cases=10, repeats=repeats, variants=1, available=100_000,
                           check_kinds=kinds, family=family, icc=rho)
        info = metric_info("promises", kinds)
        truth = planning_truth(question, info, margin, plan.spread, rho, repeats, (), kinds)
        at_plan = simulated_power(question, info, plan.recommended_cases, repeats, truth, family, 99, series)
        smaller = int(plan.recommended_cases / 1.1)
        at_smaller = simulated_power(question, info, smaller, repeats, truth, family, 99, series)
        rows.append(dict(test="V9", cell=f"p={above + 2 * margin:g} vs {above + margin:g} rho={rho} R={repeats} {family}",
                         closed_form=plan.closed_form_cases, planned=plan.recommended_cases, power=at_plan,
                         smaller=smaller, power_smaller=at_smaller))
    return rows
