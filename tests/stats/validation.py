"""The validation grids of statistics.md §12 (V1-V9), as functions returning measured rows.

Every grid runs the verdict path: the interval functions `decide` calls (estimates.rate_interval,
mean_interval, ratio_interval and single; pairs.pair_rate_interval, paired_mean_interval,
paired_ratio_interval and pair_estimate) and the edges and strict rule of a real question
(edges.threshold_verdicts, pairs.primary_edge, guardrail_edge, interval_verdicts), with non-zero
margins and in both directions. A cell puts the truth exactly on the question's edge, so that
P(confirmed) and P(refuted) are the two one-sided miss rates of the interval: 2.5% each (§11.1), and
1 - both is the coverage. `tests/stats/test_validation.py` checks that these verdicts are `decide`'s
own on the same data (`threshold_data` / `pair_data` give it the series in `decide`'s case order).

The tests assert each row against its band; `bench/validation_table.py` prints the same rows for
docs/statistics.md. Every grid is seeded, so a run is deterministic. Sizes are stated per grid.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from pytest_aqven.stats import betting, intervals
from pytest_aqven.stats.edges import (
    interval_verdict,
    interval_verdicts,
    no_upper_bound,
    threshold_verdicts,
    without_candidate_high,
)
from pytest_aqven.stats.estimates import cost_interval, mean_interval, rate_interval, ratio_interval, single
from pytest_aqven.stats.model import Guardrail, Pair, Threshold
from pytest_aqven.stats.pairs import (
    agreement_bound,
    contrast_scale,
    guardrail_edge,
    no_interval,
    orientation,
    pair_estimate,
    pair_rate_interval,
    paired_mean_interval,
    paired_ratio_interval,
    primary_edge,
)
from pytest_aqven.stats.plan import logit_location
from pytest_aqven.stats.samples import HIGHER, LOWER, Sample, bounded_scale, metric_info, positive_unbounded

from .sim import GH_NODES, GH_WEIGHTS, beta_binomial, broken_cases, ceiling_scores, hard_case_mixture, logit_pair, tails

S = 2000  # series per cell for the closed-form methods: MC error of a 2.5% tail is 0.0035
MARGIN = 0.05  # the margin of every grid question with an absolute margin


def row(test, cell, low, high, truth, **extra):
    cov, over, under = tails(low, high, truth)
    return dict(test=test, cell=cell, coverage=cov, over=over, under=under, **extra)


def bounds(interval):
    return interval.low, interval.high


def verdict_row(test, cell, verdicts, good_low: bool = True, **extra):
    """P(confirmed) and P(refuted) of one question over the series, truth on its edge; `over` and `under`
    are the same rates as miss rates of the interval (P(low > truth), P(high < truth)): confirmed is
    `over` when the good side is up (threshold above, pair on the good-direction scale), `under` when
    it is down (threshold below)."""
    confirmed, refuted = float(np.mean(verdicts == "pass")), float(np.mean(verdicts == "fail"))
    over, under = (confirmed, refuted) if good_low else (refuted, confirmed)
    return dict(test=test, cell=cell, confirmed=confirmed, refuted=refuted, coverage=1 - confirmed - refuted,
                over=over, under=under, **extra)


# ---- the questions of a grid cell: each with its edge exactly at the truth


def thresholds(truth: float, margin: float = MARGIN, metric: str = "x") -> tuple[Threshold, Threshold]:
    """Above truth - margin and below truth + margin: both edges are the truth."""
    return (Threshold(metric, above=truth - margin, margin=margin),
            Threshold(metric, below=truth + margin, margin=margin))


def threshold_rows(test, cell, low_high, truth, margin=MARGIN, open_above=False, **extra):
    """One row per direction of `thresholds(truth)`: the verdicts of the interval (low, high) at each edge;
    `open_above`: a cost with no per-attempt bound known, whose upper bound decides nothing (`decide`'s rule)."""
    rows = []
    for question in thresholds(truth, margin):
        above = question.above is not None
        verdicts = threshold_verdicts(question, *low_high)
        if open_above:
            verdicts = no_upper_bound(question, verdicts)
        rows.append(verdict_row(test, f"{cell} {'above' if above else 'below'}", verdicts, above,
                                bound="above" if above else "below", **extra))
    return rows


def pair_question(good_truth: float, direction: str, metric: str = "x") -> Pair:
    """The pair whose edge is the truth on the good-direction scale: compare at a margin of the truth
    when the candidate is better, noninferior at its size when worse, compare at 0 on an A/A."""
    if good_truth < 0:
        return Pair("noninferior", "base", "cand", metric, -good_truth, direction)
    return Pair("compare", "base", "cand", metric, good_truth, direction)


def pair_verdicts(question: Pair | Guardrail, interval, mb, mc, shape, direction=None, scale=(0.0, 1.0)):
    """A pair cell's verdicts: its interval against the primary's (or the guardrail's) edge. Where the
    variants agree on every case, the exact agreement bound on a known scale (an absolute edge), else
    no decision (§4.4's guards)."""
    if isinstance(question, Pair):
        edge = primary_edge(question)
    else:
        edge = guardrail_edge(question, direction, "rate" if shape == "rate" else "score")
    low, high = interval.low, interval.high
    agree = no_interval(mb, mc, shape) != ""
    if scale is not None and (isinstance(question, Pair) or not question.relative):
        bound = agreement_bound(mb.shape[-1], scale)
        low, high = np.where(agree, -bound, low), np.where(agree, bound, high)
        agree = np.zeros_like(agree)
    return np.where(agree, "unclear", interval_verdicts(low, high, edge))


def rate_pair_verdicts(question, kb, kc, n, family, order=None, direction=None):
    """Paired rates through the verdict path: M2 (+ betting) on the question's contrast."""
    direction = direction or question.direction
    sign = orientation(direction)
    margin = question.margin if isinstance(question, Guardrail) and question.relative else None
    interval = pair_rate_interval(kc, n, kb, n, sign, contrast_scale(sign, margin), family, order)
    return pair_verdicts(question, interval, kb / n, kc / n, "rate", direction)


def mean_pair_verdicts(question, mb, mc, family, scale, order=None, direction=None):
    """Paired means through the verdict path: paired t (+ betting on a known `scale`) on the contrast."""
    direction = direction or question.direction
    sign = orientation(direction)
    margin = question.margin if isinstance(question, Guardrail) and question.relative else None
    interval = paired_mean_interval(mc, mb, sign, contrast_scale(sign, margin), family, scale, order)
    return pair_verdicts(question, interval, mb, mc, "mean", direction, scale)


# ---- V1 / V2: M1 (single rate), thresholds above and below


def v1_rows(series=S):
    """M1, regular regime: 2 x 2 x 2 x 4 = 32 cells, each as a threshold above and one below."""
    rows = []
    for cases in (30, 100):
        for repeats in (5, 20):
            for mu in (0.5, 0.8):
                for rho in (0.02, 0.1, 0.3, 0.6):
                    rng = np.random.default_rng([1, cases, repeats, int(mu * 100), int(rho * 100)])
                    k, n = beta_binomial(rng, mu, rho, series, cases, repeats)
                    rows += threshold_rows("V1", f"C={cases} R={repeats} mu={mu} rho={rho}",
                                           bounds(rate_interval(k, n, "model")), mu)
    return rows


def v2_rows(series=S):
    """M1 at the boundary: mu = 0.97, 3 x 2 x 4 smooth cells + 6 mixture cells (3% at p = 0.1)."""
    rows = []
    for cases in (12, 30, 100):
        for repeats in (5, 20):
            for rho in (0.02, 0.1, 0.3, 0.6):
                rng = np.random.default_rng([2, cases, repeats, int(rho * 100)])
                k, n = beta_binomial(rng, 0.97, rho, series, cases, repeats)
                interval = rate_interval(k, n, "model")
                rows += threshold_rows("V2", f"C={cases} R={repeats} rho={rho}", bounds(interval), 0.97,
                                       width=float(np.mean(interval.high - interval.low)))
            rng = np.random.default_rng([22, cases, repeats])
            p_good = (0.97 - 0.03 * 0.1) / 0.97
            k, n, mu = hard_case_mixture(rng, 0.03, 0.1, p_good, series, cases, repeats)
            interval = rate_interval(k, n, "model")
            rows += threshold_rows("V2", f"C={cases} R={repeats} mixture 3% at 0.1", bounds(interval), mu,
                                   width=float(np.mean(interval.high - interval.low)))
    return rows


MIXTURES = ((0.03, 0.1, 0.99), (0.05, 0.0, 0.98), (0.10, 0.2, 0.95))


def robust_mixture_rows(series=S):
    """Hard-case mixtures (a few % of cases at a low rate): M1 vs the robust hull. 5 x 2 x 3 cells, each
    as a threshold above (the false confirmation hard cases cause) and below."""
    rows = []
    for cases in (12, 20, 40, 60, 100):
        for repeats in (5, 20):
            for share, p_hard, p_good in MIXTURES:
                rng = np.random.default_rng([3, cases, repeats, int(share * 100)])
                k, n, mu = hard_case_mixture(rng, share, p_hard, p_good, series, cases, repeats)
                cell = f"C={cases} R={repeats} {share:.0%} at {p_hard}, rest {p_good}"
                model = threshold_rows("V2-mix", cell, bounds(rate_interval(k, n, "model")), mu, margin=0.02)
                robust = threshold_rows("V2-mix", cell, bounds(rate_interval(k, n, "robust")), mu, margin=0.02)
                rows += [dict(r, m1_confirmed=m["confirmed"]) for r, m in zip(robust, model)]
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


# ---- V4 / V5: M2 (paired rates), compare and noninferior in both directions

V4_RATES = ((0.70, 0.75), (0.95, 0.97), (0.90, 0.85), (0.97, 0.95), (0.60, 0.60))


def v4_rows(series=S, repeats=10):
    """M2 paired binary, logit-normal DGP: 4 x 5 x 2 x 3 = 120 cells, R = 10.

    Each cell is the pair whose edge is the truth: higher is better at sd_case 1 (p_c - p_b), lower is
    better at sd_case 2.5 (the same rates read as error rates: p_b - p_c), so every rate pair and number
    of cases is decided in both directions, as compare (candidate better) or noninferior (worse).
    """
    rows = []
    for cases in (12, 30, 50, 100):
        for p_b, p_c in V4_RATES:
            for sd_case in (1.0, 2.5):
                direction = HIGHER if sd_case == 1.0 else LOWER
                for sd_effect in (0.0, 0.5, 0.8):
                    rng = np.random.default_rng([5, cases, int(p_b * 100), int(p_c * 100), int(sd_case * 10),
                                                 int(sd_effect * 10)])
                    kb, kc, n = logit_pair(rng, p_b, p_c, sd_case, sd_effect, series, cases, repeats)
                    question = pair_question(orientation(direction) * (p_c - p_b), direction)
                    verdicts = rate_pair_verdicts(question, kb, kc, n, "model")
                    rows.append(verdict_row("V4", f"C={cases} {p_b}->{p_c} sd_case={sd_case} sd_eff={sd_effect} "
                                            f"{question.kind} {direction}", verdicts, cases=cases, rates=(p_b, p_c)))
    return rows


def concentrated_harm_rows(series=S, repeats=10):
    """Noninferiority with the harm concentrated in a few cases, truth exactly at -margin.

    Baseline rate p on every case; the candidate fails a hidden share of cases completely and
    matches the baseline elsewhere, so Delta = -share * p. Robust must hold its tails; M2 need not.
    The 3% cells read the same data as failure rates, lower is better (the candidate fails more).
    """
    rows = []
    for cases in (20, 40, 60, 100):
        for share, p in ((0.05, 0.95), (0.03, 0.97), (0.10, 0.9)):
            rng = np.random.default_rng([6, cases, int(share * 100)])
            broken = rng.random((series, cases)) < share
            n = np.full((series, cases), float(repeats))
            kb = rng.binomial(repeats, np.full((series, cases), p)).astype(float)
            kc = rng.binomial(repeats, np.where(broken, 0.0, p)).astype(float)
            direction = LOWER if share == 0.03 else HIGHER
            if direction == LOWER:
                kb, kc = n - kb, n - kc
            question = Pair("noninferior", "base", "cand", "x", share * p, direction)
            model = verdict_row("V4-harm", "", rate_pair_verdicts(question, kb, kc, n, "model"))
            robust = rate_pair_verdicts(question, kb, kc, n, "robust")
            rows.append(verdict_row("V4-harm", f"C={cases} {share:.0%} of cases broken, p={p} {direction}", robust,
                                    m2_confirmed=model["confirmed"]))
    return rows


def v5_rows(series=S, repeats=10):
    """A/A and boundary truths through the verdict rule, both families, C in {12, 30, 100}.

    P(confirmed) and P(refuted) of: an A/A compare at margin 0 (higher and lower is better), NI with truth
    at -m, compare with truth at +m (m = 0.05), and an A/A paired t on bounded scores (both directions).
    """
    rows = []
    margin = MARGIN
    for cases in (12, 30, 100):
        for family in ("robust", "model"):
            rng = np.random.default_rng([7, cases])
            kb, kc, n = logit_pair(rng, 0.8, 0.8, 1.5, 0.0, series, cases, repeats)
            for direction in (HIGHER, LOWER):
                verdicts = rate_pair_verdicts(pair_question(0.0, direction), kb, kc, n, family)
                rows.append(verdict_row("V5", f"A/A rate C={cases} {family} {direction}", verdicts))
            kb, kc, n = logit_pair(rng, 0.85, 0.85 - margin, 1.5, 0.5, series, cases, repeats)
            verdicts = rate_pair_verdicts(pair_question(-margin, HIGHER), kb, kc, n, family)
            rows.append(verdict_row("V5", f"NI truth -m C={cases} {family}", verdicts))
            kb, kc, n = logit_pair(rng, 0.75, 0.75 + margin, 1.5, 0.5, series, cases, repeats)
            verdicts = rate_pair_verdicts(pair_question(margin, HIGHER), kb, kc, n, family)
            rows.append(verdict_row("V5", f"compare truth +m C={cases} {family}", verdicts))
            level = special.expit(rng.normal(0.5, 1.0, (series, cases)))
            sb = np.clip(level + rng.normal(0, 0.1, (series, cases)) / np.sqrt(repeats), 0, 1)
            sc = np.clip(level + rng.normal(0, 0.1, (series, cases)) / np.sqrt(repeats), 0, 1)
            for direction in (HIGHER, LOWER):
                verdicts = mean_pair_verdicts(pair_question(0.0, direction), sb, sc, family, (0.0, 1.0))
                rows.append(verdict_row("V5", f"A/A score C={cases} {family} {direction}", verdicts))
    return rows


# ---- V5-edge: every question kind with a non-zero margin, truth on the edge, both directions

def score_attempts(rng, levels, repeats, concentration=20.0):
    """Judge scores in [0, 1]: each attempt Beta around its case's level (mean exactly the level)."""
    lv = np.clip(levels, 1e-6, 1 - 1e-6)[..., None] * np.ones(repeats)
    return rng.beta(lv * concentration, (1 - lv) * concentration)


EDGE_CASES = (12, 30, 100)


def threshold_data(kind: str, rng, series: int, cases: int):
    """(data, truth) of a V5-edge threshold cell: rates (k, n) or score case means, truth = the mean."""
    if kind == "rate":
        k, n = beta_binomial(rng, 0.85, 0.1, series, cases, 10)
        return (k, n), 0.85
    levels = rng.beta(0.7 * 8, 0.3 * 8, (series, cases))
    return score_attempts(rng, levels, 5), 0.7


def threshold_interval(kind: str, data, family: str, order=None):
    if kind == "rate":
        return rate_interval(*data, family, order)
    return mean_interval(data.mean(axis=-1), family, (0.0, 1.0), False, order)


# (kind, metric shape, question, p_b, p_c): rates are logit-normal case rates; scores Beta attempts around them
EDGE_PAIRS = (
    ("compare", "rate", HIGHER, 0.70, 0.75),
    ("compare", "rate", LOWER, 0.30, 0.25),
    ("noninferior", "rate", HIGHER, 0.85, 0.80),
    ("noninferior", "rate", LOWER, 0.15, 0.20),
    ("relative", "rate", HIGHER, 0.80, 0.72),  # p_c = (1 - 0.1) p_b: the contrast's truth is 0
    ("relative", "rate", LOWER, 0.20, 0.22),  # p_c = (1 + 0.1) p_b
    ("noninferior", "score", HIGHER, 0.75, 0.70),
    ("compare", "score", LOWER, 0.40, 0.35),
    ("relative", "score", HIGHER, 0.60, 0.54),
    ("relative", "score", LOWER, 0.40, 0.44),
)
RELATIVE = 0.1


def edge_question(kind: str, direction: str, p_b: float, p_c: float) -> Pair | Guardrail:
    if kind == "relative":
        return Guardrail("x", RELATIVE, direction, relative=True)
    return pair_question(orientation(direction) * (p_c - p_b), direction)


def pair_data(shape: str, p_b: float, p_c: float, rng, series: int, cases: int):
    """(base, cand) per-case data of a V5-edge pair cell: (kb, kc, n) of rates, attempt scores of scores."""
    if shape == "rate":
        return logit_pair(rng, p_b, p_c, 1.0, 0.5, series, cases, 10)
    a_b = logit_location(p_b, 1.0)
    a_c = logit_location(p_c, math.hypot(1.0, 0.3))
    theta = rng.normal(0, 1.0, (series, cases))
    base = score_attempts(rng, special.expit(a_b + theta), 5)
    cand = score_attempts(rng, special.expit(a_c + theta + rng.normal(0, 0.3, (series, cases))), 5)
    return base, cand


def edge_pair_verdicts(shape, question, data, family, order=None):
    if shape == "rate":
        kb, kc, n = data
        return rate_pair_verdicts(question, kb, kc, n, family, order)
    base, cand = data
    return mean_pair_verdicts(question, base.mean(axis=-1), cand.mean(axis=-1), family, (0.0, 1.0), order)


def edge_rows(series=S):
    """§11.1's guarantee for every question kind at a non-zero margin: thresholds above and below on a
    rate and on a judge score; compare, noninferior and relative guardrails on paired rates and scores,
    higher and lower is better; both families; C in {12, 30, 100}. 12 x 3 x 2 = 72 cells."""
    rows = []
    for cases in EDGE_CASES:
        for family in ("robust", "model"):
            for kind in ("rate", "score"):
                rng = np.random.default_rng([13, cases, len(kind)])
                data, truth = threshold_data(kind, rng, series, cases)
                rows += threshold_rows("V5-edge", f"threshold {kind} C={cases} {family}",
                                       bounds(threshold_interval(kind, data, family)), truth, cases=cases,
                                       family=family)
            for i, (kind, shape, direction, p_b, p_c) in enumerate(EDGE_PAIRS):
                rng = np.random.default_rng([14, cases, i])
                question = edge_question(kind, direction, p_b, p_c)
                verdicts = edge_pair_verdicts(shape, question, pair_data(shape, p_b, p_c, rng, series, cases), family)
                rows.append(verdict_row("V5-edge", f"{kind} {shape} {direction} {p_b}->{p_c} C={cases} {family}",
                                        verdicts, cases=cases, family=family))
    return rows


# ---- V6: means of case means (skewness-corrected t) and paired t


def _lognormal_attempts(rng, sigma_c, sigma_w, series, cases, repeats, shift=0.0):
    """Attempts exp(a_i + shift + e_ij) with E[attempt | case] = exp(a_i + shift)."""
    a = rng.normal(0, sigma_c, (series, cases, 1))
    e = rng.normal(-sigma_w**2 / 2, sigma_w, (series, cases, repeats))
    return np.exp(a + shift + e), a


def v6_rows(series=S, repeats=5):
    """Means of case means, lognormal case means (sigma_c 0.5 and 1.0), C in {12, 30, 100}.

    Rows: the plain t on case means (the baseline that undercovers, an interval alone), the
    skewness-corrected t the verdict uses for cost_usd (`skew-t`: thresholds below and above, margin
    a tenth of the truth), and the paired t on per-case differences (a noninferiority on cost, lower is
    better, and the compare of the same data read higher is better: margin the truth).
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
            rows += threshold_rows("V6", f"skew-t C={cases} sigma_c={sigma_c}",
                                   bounds(mean_interval(means, "robust", None, skewed=True)), truth, truth / 10,
                                   cases=cases)
            tau, delta = 0.2, 0.1
            v = rng.normal(0, tau, (series, cases, 1))
            e = rng.normal(-0.125, 0.5, (series, cases, repeats))
            yc = np.exp(a + delta + v + e).mean(axis=2)
            truth_d = truth * (math.exp(delta + tau**2 / 2) - 1)  # the candidate costs more
            for direction in (LOWER, HIGHER):
                question = pair_question(orientation(direction) * truth_d, direction, "cost_usd")
                verdicts = mean_pair_verdicts(question, means, yc, "robust", None)
                rows.append(verdict_row("V6", f"paired t C={cases} sigma_c={sigma_c} {question.kind} {direction}",
                                        verdicts, cases=cases))
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
    """The skewness-corrected t on other positive shapes (symmetric to strongly skewed), next to t:
    thresholds above and below at a margin of a tenth of the truth."""
    rows = []
    for name, draw, truth in V6_SHAPES:
        for cases in (12, 30, 100):
            rng = np.random.default_rng([81, cases, len(name)])
            x = draw(rng, (series, cases))
            _, low, high, _ = intervals.t_mean(x)
            t_row = row("V6-shape", "", low, high, truth)
            for r in threshold_rows("V6-shape", f"skew-t {name} C={cases}",
                                    bounds(mean_interval(x, "robust", None, skewed=True)), truth, truth / 10,
                                    cases=cases):
                rows.append(dict(r, t_over=t_row["over"], t_under=t_row["under"]))
    return rows


# ---- V7: cost_of_pass (M7) and the paired log ratio of a relative cost guardrail


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
    """M7 (cost_of_pass: thresholds below and above, margin a tenth of the truth) and the paired log ratio
    of a relative cost_of_pass guardrail (the candidate dearer: lower is better, edge -log(1 + m); the
    same data with the roles swapped: higher is better, edge log(1 - m)), pass rates 0.3-0.9, C 12-100."""
    rows = []
    mean_level = 0.01 * math.exp(0.125)  # E[exp(0.5 * N(0, 1))]
    for cases in (12, 30, 100):
        for p in (0.3, 0.6, 0.9):
            rng = np.random.default_rng([9, cases, int(p * 10)])
            y, x, z, w = _cost_pass(rng, p, series, cases, repeats)
            ok = x.sum(axis=1) > 0
            truth = mean_level / p
            rows += threshold_rows("V7", f"M7 C={cases} p={p}", bounds(ratio_interval(y[ok], x[ok])), truth, truth / 10,
                                   cases=cases)
            # candidate: 30% dearer, +0.3 on the logit of every case
            a = logit_location(p, 1.0)
            rate_c = special.expit(a + 0.3 + z)
            level_c = 0.013 * np.exp(0.5 * (-0.5 * z + math.sqrt(0.75) * w))
            yc = (level_c[..., None] * np.exp(rng.normal(-0.045, 0.3, (series, cases, repeats)))).sum(axis=2)
            xc = rng.binomial(repeats, rate_c).astype(float)
            p_c = float(np.sum(GH_WEIGHTS * special.expit(a + 0.3 + GH_NODES)))
            log_ratio = math.log(1.3 * mean_level / p_c) - math.log(mean_level / p)  # log(R_c / R_b) > 0
            ok = (x.sum(axis=1) > 0) & (xc.sum(axis=1) > 0)
            for direction in (LOWER, HIGHER):
                # lower is better: R_c <= (1 + m) R_b; swapped, higher is better: R_b >= (1 - m) R_c
                if direction == LOWER:
                    arms, margin = (yc[ok], xc[ok], y[ok], x[ok]), math.expm1(log_ratio)
                else:
                    arms, margin = (y[ok], x[ok], yc[ok], xc[ok]), -math.expm1(-log_ratio)
                guard = Guardrail("cost_of_pass", margin, direction, relative=True)
                interval = paired_ratio_interval(*arms, orientation(direction), log=True)
                verdicts = interval_verdicts(interval.low, interval.high, guardrail_edge(guard, direction, "log_ratio"))
                rows.append(verdict_row("V7", f"paired log ratio C={cases} p={p} {direction}", verdicts, cases=cases))
    return rows


# ---- V8: quantiles, through `single` (M5) and `pair_estimate` (M6), one series at a time


def _latency_sample(values: np.ndarray, q: float) -> Sample:
    info = metric_info("latency_p95_ms" if q > 0.5 else "latency_p50_ms", {})
    cases = values.shape[0]
    return Sample(info, tuple(f"c{i:03d}" for i in range(cases)), values.ravel(), np.full(cases, values.shape[1]))


def v8_m5_rows(series=1000, repeats=10):
    """M5 Woodruff, p50 and p95, lognormal latency exp(7 + a + e), 1000 series per cell: `single`'s
    estimate against thresholds below and above the truth (margin 5%), and its reliability flag."""
    rows = []
    for q in (0.5, 0.95):
        for cases in (12, 30, 100):
            for sigma_c, sigma_w in ((0.5, 0.5), (1.0, 0.3)):
                rng = np.random.default_rng([10, int(q * 100), cases, int(sigma_c * 10)])
                lat = np.exp(7 + rng.normal(0, sigma_c, (series, cases, 1)) + rng.normal(0, sigma_w, (series, cases, repeats)))
                truth = math.exp(7 + math.hypot(sigma_c, sigma_w) * stats.norm.ppf(q))
                estimates = [single(_latency_sample(lat[s], q), "v8", "robust") for s in range(series)]
                low = np.array([-np.inf if e.low is None else e.low for e in estimates])
                high = np.array([np.inf if e.high is None else e.high for e in estimates])
                flagged = np.array([e.reliability != "ok" for e in estimates])
                missed = (low > truth) | (high < truth)
                flagged_share = float(flagged[missed].mean()) if missed.any() else 1.0
                rows += threshold_rows("V8", f"M5 p{int(q * 100)} C={cases} sigma_c={sigma_c} sigma_w={sigma_w}",
                                       (low, high), truth, truth / 20, cases=cases, q=q, sigma_c=sigma_c,
                                       flagged_misses=flagged_share)
    return rows


def v8_m6_rows(series=400, repeats=10, resamples=1000):
    """M6 paired cluster bootstrap of log(p95_c / p95_b) through `pair_estimate` (1000 resamples, where a
    verdict draws 10,000) and a relative latency_p95_ms guardrail at the truth: 400 series per cell.

    Pure scale shift (shared case effects, factor 1.2) and a heterogeneous shift (case-specific
    slowdowns, sd 0.3 on the log scale). The candidate is slower: lower is better, edge -log(1 + m);
    in the C=30 cells the roles are swapped and higher is better, edge log(1 - m).
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
        log_ratio = math.log(factor) + z * (math.sqrt(sigma_c**2 + tau**2 + sigma_w**2) - math.hypot(sigma_c, sigma_w))
        direction = HIGHER if cases == 30 else LOWER
        if direction == LOWER:
            guard = Guardrail("latency_p95_ms", math.expm1(log_ratio), direction, relative=True)
        else:
            base, cand = cand, base
            guard = Guardrail("latency_p95_ms", -math.expm1(-log_ratio), direction, relative=True)
        verdicts = []
        for i in range(series):
            estimate = pair_estimate(_latency_sample(base[i], q), _latency_sample(cand[i], q), direction, "v8",
                                     "robust", guard.margin, ("base", "cand"), resamples)
            verdicts.append(interval_verdict(estimate.low, estimate.high,
                                             guardrail_edge(guard, direction, estimate.unit)))
        rows.append(verdict_row("V8", f"M6 log p95 ratio C={cases} shift sd={tau} {direction}", np.array(verdicts),
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
    from pytest_aqven.stats import launch_plan  # noqa: PLC0415
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


# ---- V11: bounded scales, perfect agreement and rare events (the robust family, through the verdict path)

SCALE_DECLARATIONS = (  # (cell, check kind, declared scale): None is the 1..5 scores rescaled to [0, 1]
    ("continuous 1..5", "continuous", (1.0, 5.0)),
    ("ordinal 1..5", "ordinal", (1.0, 5.0)),
    ("rescaled [0, 1]", "continuous", None),
)


def declared_interval(scores: np.ndarray, kind: str, scale, family: str = "robust", order=None):
    """`single`'s interval for a score check declared `kind` with `scale` on these case means: the scale
    and skew it picks (samples.bounded_scale / positive_unbounded on the first series) applied to all."""
    first = scores[0]
    sample = Sample(metric_info("x", {"x": kind}, {"x": scale} if scale else {}),
                    tuple(f"c{i:03d}" for i in range(first.shape[0])), first.ravel(), np.full(first.shape[0], first.shape[1]))
    return mean_interval(scores.mean(axis=-1), family, bounded_scale(sample), positive_unbounded(sample), order)


def bounded_scale_rows(series=S, cases_grid=(12, 30)):
    """A 1..5 judge at its ceiling (96% of cases near 5, 4% always 1; mean 4.792), declared continuous or
    ordinal with its range, and the same judgements rescaled to [0, 1]: thresholds above and below at the
    mean, margin a fortieth of the scale. The three give the same verdicts."""
    rows = []
    for cases in cases_grid:
        rng = np.random.default_rng([15, cases])
        scores, truth = ceiling_scores(rng, series, cases, 5)
        for cell, kind, scale in SCALE_DECLARATIONS:
            factor = 1.0 if scale else 0.25           # (x - 1) / 4 rescales 1..5 to [0, 1]
            x, at = (scores, truth) if scale else ((scores - 1.0) * factor, (truth - 1.0) * factor)
            rows += threshold_rows("V11-scale", f"{cell} C={cases}", bounds(declared_interval(x, kind, scale)), at,
                                   0.1 * factor, cases=cases, declared=cell)
    return rows


def agreement_rows(series=S, cases_grid=(30, 129)):
    """Perfect agreement decided by the exact bound: the candidate breaks a hidden share q of cases that the
    baseline passes, asked as noninferiority at margin q (the truth on the edge), q a hair above the bound
    1 - 0.025^(1/C): the worst case, where agreeing on every case confirms and has chance just under 2.5%;
    and an A/A on always-passing cases at margin 0.1, where P(confirmed) is power (1 once C >= 36)."""
    rows = []
    for cases in cases_grid:
        share = float(agreement_bound(cases)) * 1.001
        rng = np.random.default_rng([16, cases])
        kb, kc, n = broken_cases(rng, share, series, cases, 5)
        question = Pair("noninferior", "base", "cand", "x", share, HIGHER)
        rows.append(verdict_row("V11-agree", f"{share:.4f} of cases broken, margin {share:.4f} C={cases}",
                                rate_pair_verdicts(question, kb, kc, n, "robust"), cases=cases))
        kb, kc, n = broken_cases(rng, 0.0, series, cases, 5)
        aa = rate_pair_verdicts(Pair("noninferior", "base", "cand", "x", 0.1, HIGHER), kb, kc, n, "robust")
        rows.append(dict(verdict_row("V11-agree", f"A/A all pass, margin 0.1 C={cases}", aa, cases=cases), power=True))
    return rows


def rare_event_rows(series=S, cases_grid=(30, 100)):
    """Rates of 0.99 and 0.995 (beta-binomial, rho 0.3, 10 attempts a case; and 1% of cases at 0.5):
    thresholds above and below at the truth, margin 0.002."""
    rows = []
    for cases in cases_grid:
        for mu in (0.99, 0.995):
            rng = np.random.default_rng([17, cases, int(mu * 1000)])
            k, n = beta_binomial(rng, mu, 0.3, series, cases, 10)
            rows += threshold_rows("V11-rare", f"mu={mu} rho=0.3 C={cases}", bounds(rate_interval(k, n, "robust")), mu,
                                   0.002, cases=cases)
            p_good = (mu - 0.01 * 0.5) / 0.99
            k, n, truth = hard_case_mixture(rng, 0.01, 0.5, p_good, series, cases, 10)
            rows += threshold_rows("V11-rare", f"mu={mu} 1% at 0.5 C={cases}", bounds(rate_interval(k, n, "robust")),
                                   truth, 0.002, cases=cases)
    return rows


# ---- costs with heavy tails: cost_usd thresholds through `cost_interval`, before (the skewness-corrected t
# alone, as main decided them) and after


def _log_spread(costs: np.ndarray):
    """`estimates.log_spread` of every series at once: costs (series, cases, repeats), all positive."""
    logs = np.log(costs)
    case_logs = logs.mean(axis=-1)
    within = ((logs - case_logs[..., None]) ** 2).sum(axis=(-2, -1))
    cases, repeats = costs.shape[-2:]
    return case_logs, within, cases * (repeats - 1), float(repeats)


# (name, between-case log sd, within-case log sd): each lognormal with mean 1, so the truth is 1
COST_SHAPES = (
    ("case sigma 1", 1.0, 0.5),
    ("case sigma 2", 2.0, 0.5),
    ("attempt sigma 1", 0.5, 1.0),
    ("attempt sigma 2", 0.5, 2.0),
    ("icc 0.9 sigma 2", 2.0 * math.sqrt(0.9), 2.0 * math.sqrt(0.1)),
)
RARE_SHARE, RARE_FACTOR, RARE_BOUND = 0.01, 100.0, 150.0  # typical cost U(0.5, 1.5); the bound is exact


def cost_draws(name: str, rng, series: int, cases: int, repeats: int) -> tuple[np.ndarray, float]:
    """(attempt costs (series, cases, repeats), truth): a lognormal of COST_SHAPES, or "rare": 1% of
    attempts cost 100x a typical U(0.5, 1.5) cost."""
    if name == "rare":
        huge = rng.random((series, cases, repeats)) < RARE_SHARE
        costs = rng.uniform(0.5, 1.5, (series, cases, repeats)) * np.where(huge, RARE_FACTOR, 1.0)
        return costs, 1 - RARE_SHARE + RARE_SHARE * RARE_FACTOR
    sd_case, sd_attempt = {shape: (a, e) for shape, a, e in COST_SHAPES}[name]
    a = rng.normal(-sd_case**2 / 2, sd_case, (series, cases, 1))
    e = rng.normal(-sd_attempt**2 / 2, sd_attempt, (series, cases, repeats))
    return np.exp(a + e), 1.0


COST_CELLS = tuple((name, repeats) for name, _, _ in COST_SHAPES for repeats in (1, 5)) + (("rare", 1), ("rare", 5))


def cost_rows(series=S, cases_grid=(30, 100, 400)):
    """cost_usd thresholds below and above the truth (margin a tenth of it): lognormal costs (sigma 1 and 2
    between cases, within cases, and with an intra-case correlation of 0.9 on the log scale) and rare huge
    costs (1% of attempts at 100x), 1 or 5 attempts a case. Each row: `cost_interval`'s verdicts with no
    known bound, `before_*` the skewness-corrected t's alone, and for rare huge costs `bound_*` with the
    per-attempt bound known (robust: the betting hull on [0, 150]). Without a bound `decide` takes no verdict
    that rests on the upper bound (`open_above`); `model_*` are the verdicts of the same interval with it, as
    decided until now (the model family still does)."""
    rows = []
    for cases in cases_grid:
        for i, (name, repeats) in enumerate(COST_CELLS):
            rng = np.random.default_rng([15, cases, i])
            costs, truth = cost_draws(name, rng, series, cases, repeats)
            means = costs.mean(axis=-1)
            after = cost_interval(means, _log_spread(costs), "robust")
            before = mean_interval(means, "robust", None, skewed=True)
            cell = f"{name} C={cases} R={repeats}"
            extra = {}
            if name == "rare":
                known = cost_interval(means, _log_spread(costs), "robust", bound=RARE_BOUND)
                extra = {"bound": threshold_rows("cost", cell, bounds(known), truth, truth / 10)}
            pairs = zip(threshold_rows("cost", cell, bounds(after), truth, truth / 10, True, cases=cases, shape=name),
                        threshold_rows("cost", cell, bounds(before), truth, truth / 10),
                        threshold_rows("cost", cell, bounds(after), truth, truth / 10))
            for side, (a, b, m) in enumerate(pairs):
                row = dict(a, before_confirmed=b["confirmed"], before_refuted=b["refuted"],
                           model_confirmed=m["confirmed"], model_refuted=m["refuted"])
                if extra:
                    row.update(bound_confirmed=extra["bound"][side]["confirmed"],
                               bound_refuted=extra["bound"][side]["refuted"])
                rows.append(row)
    return rows


def cost_pair_rows(series=S, cases_grid=(30, 100, 400)):
    """A relative cost_usd guardrail (the candidate 10% dearer in truth, margin 0.1, lower is better: on
    the edge) through `mean_pair_verdicts`, both arms sharing each case's level: the cells of
    `cost_rows`; rare huge costs also with the per-attempt bound known (`bound_*`)."""
    rows = []
    guard = Guardrail("cost_usd", 0.1, LOWER, relative=True)
    shapes = {name: (a, e) for name, a, e in COST_SHAPES}
    for cases in cases_grid:
        for i, (name, repeats) in enumerate(COST_CELLS):
            rng = np.random.default_rng([16, cases, i])
            if name == "rare":
                base, _ = cost_draws(name, rng, series, cases, repeats)
                cand, _ = cost_draws(name, rng, series, cases, repeats)
            else:
                sd_case, sd_attempt = shapes[name]
                level = rng.normal(-sd_case**2 / 2, sd_case, (series, cases, 1))
                base, cand = (np.exp(level + rng.normal(-sd_attempt**2 / 2, sd_attempt, (series, cases, repeats)))
                              for _ in range(2))
            mb, mc = base.mean(axis=-1), 1.1 * cand.mean(axis=-1)
            verdicts = mean_pair_verdicts(guard, mb, mc, "robust", None, direction=LOWER)
            extra = {}
            if name == "rare":
                sign = orientation(LOWER)
                known = paired_mean_interval(mc, mb, sign, contrast_scale(sign, guard.margin), "robust",
                                             (0.0, 1.1 * RARE_BOUND))
                bound = verdict_row("", "", pair_verdicts(guard, known, mb, mc, "mean", LOWER))
                extra = {"bound_confirmed": bound["confirmed"], "bound_refuted": bound["refuted"]}
            rows.append(verdict_row("cost-pair", f"relative guardrail {name} C={cases} R={repeats}", verdicts,
                                    cases=cases, shape=name, **extra))
    return rows


RUNAWAY_MARGIN = 0.1


def _runaway_candidate(name: str, rng, series: int, cases: int, repeats: int, mean: float) -> np.ndarray:
    """The candidate's attempt costs with the given mean: "rare" (1% of attempts at 100x a typical
    U(0.5, 1.5) cost) or "attempt sigma 2" (lognormal, sigma 2 within cases), scaled."""
    costs, truth = cost_draws(name, rng, series, cases, repeats)
    return costs * (mean / truth)


def cost_runaway_rows(series=S, cases_grid=(30, 100)):
    """A candidate that alone runs away now and then, against a baseline of typical U(0.5, 1.5) costs
    (mean 1), each on its edge: a cost_usd compare (the candidate cheaper by the 0.1 margin in truth) and a
    relative cost_usd guardrail (the candidate exactly 10% dearer), lower is better. Each row: the verdicts
    with no per-attempt bound known (the side that needs the candidate's upper bound deciding nothing),
    `before_*` the paired t's alone, and `bound_*` with the bound known (the betting hull on [0, 150])."""
    rows = []
    guard = Guardrail("cost_usd", RUNAWAY_MARGIN, LOWER, relative=True)
    compare = Pair("compare", "base", "cand", "cost_usd", RUNAWAY_MARGIN, LOWER)
    sign = orientation(LOWER)
    for cases in cases_grid:
        for i, (name, repeats) in enumerate((n, r) for n in ("rare", "attempt sigma 2") for r in (1, 5)):
            for question, cand_mean in ((compare, 1 - RUNAWAY_MARGIN), (guard, 1 + RUNAWAY_MARGIN)):
                rng = np.random.default_rng([20, cases, i, isinstance(question, Pair)])
                mb = rng.uniform(0.5, 1.5, (series, cases, repeats)).mean(axis=-1)
                mc = _runaway_candidate(name, rng, series, cases, repeats, cand_mean).mean(axis=-1)
                before = mean_pair_verdicts(question, mb, mc, "robust", None, direction=LOWER)
                after = without_candidate_high(LOWER, before)
                scale_b = contrast_scale(sign, guard.margin if question is guard else None)
                known = paired_mean_interval(mc, mb, sign, scale_b, "robust", (0.0, RARE_BOUND))
                bound = pair_verdicts(question, known, mb, mc, "mean", LOWER)
                kind = "compare" if question is compare else "relative guardrail"
                b, k = verdict_row("", "", before), verdict_row("", "", bound)
                rows.append(verdict_row("cost-runaway", f"{kind} {name} C={cases} R={repeats}", after,
                                        cases=cases, shape=name, before_confirmed=b["confirmed"],
                                        before_refuted=b["refuted"], bound_confirmed=k["confirmed"],
                                        bound_refuted=k["refuted"]))
    return rows


# ---- the width of the robust interval: hull / model-based, and what any distribution-free bound must pay

WIDTH_CELLS = tuple((c, r, mu, rho) for c in (12, 20, 30, 60, 100) for r in (1, 5, 10, 20)
                    for mu in (0.5, 0.7, 0.9, 0.97) for rho in (0.1, 0.3))


def width_rows(series=S):
    """Rates, beta-binomial case rates: the robust hull's median width over M1's (`ratio`) with both
    tails, and `floor`, the same ratio for the narrowest lower bound any interval valid for every case
    distribution can have: with share q = 1 - 0.05^(1/C) of cases moved to 0, a sample misses them
    with probability 0.05, so a valid lower bound exceeds mu (1 - q) in at most half the samples (its
    2.5% at the moved distribution over 5%); the hull's median width is then at least M1's high minus
    the smaller of M1's low and mu (1 - q)."""
    rows = []
    for cases, repeats, mu, rho in WIDTH_CELLS:
        rng = np.random.default_rng([17, cases, repeats, int(mu * 100), int(rho * 100)])
        k, n = beta_binomial(rng, mu, rho, series, cases, repeats)
        model, robust = rate_interval(k, n, "model"), rate_interval(k, n, "robust")
        model_width = float(np.median(model.high - model.low))
        limit = mu * 0.05 ** (1 / cases)
        floor = (float(np.median(model.high)) - min(float(np.median(model.low)), limit)) / model_width
        ratio = float(np.median(robust.high - robust.low)) / model_width
        measured = row("width", f"C={cases} R={repeats} mu={mu} rho={rho}", robust.low, robust.high, mu)
        rows.append(dict(measured, ratio=ratio, floor=floor, cases=cases, repeats=repeats, mu=mu, rho=rho))
    return rows


def cost_shape_rows(series=S):
    """The price of the lognormal bound: V6's other positive shapes as costs (one attempt a case),
    thresholds below and above, with the median width over the skewness-corrected t's (`width`)."""
    rows = []
    for name, draw, truth in V6_SHAPES:
        for cases in (30, 100):
            rng = np.random.default_rng([81, cases, len(name)])
            costs = draw(rng, (series, cases, 1))
            means = costs.mean(axis=-1)
            after = cost_interval(means, _log_spread(costs), "robust")
            before = mean_interval(means, "robust", None, skewed=True)
            width = float(np.median(after.high - after.low) / np.median(before.high - before.low))
            rows += threshold_rows("cost-shape", f"{name} C={cases}", bounds(after), truth, truth / 10, width=width)
    return rows


def cost_of_pass_rows(series=S, cases_grid=(30, 100, 400)):
    """A relative cost_of_pass guardrail (the candidate 10% dearer per pass in truth, margin 0.1, lower is
    better: on the edge) through `paired_ratio_interval` on the costs of `cost_pair_rows`, pass rates
    U(0.4, 1) per case shared by both variants."""
    rows = []
    guard = Guardrail("cost_of_pass", 0.1, LOWER, relative=True)
    shapes = {name: (a, e) for name, a, e in COST_SHAPES}
    for cases in cases_grid:
        for i, (name, repeats) in enumerate(COST_CELLS):
            rng = np.random.default_rng([18, cases, i])
            if name == "rare":
                yb, yc = (cost_draws(name, rng, series, cases, repeats)[0] for _ in range(2))
            else:
                sd_case, sd_attempt = shapes[name]
                level = rng.normal(-sd_case**2 / 2, sd_case, (series, cases, 1))
                yb, yc = (np.exp(level + rng.normal(-sd_attempt**2 / 2, sd_attempt, (series, cases, repeats)))
                          for _ in range(2))
            rate = rng.uniform(0.4, 1.0, (series, cases, 1))
            xb, xc = ((rng.random((series, cases, repeats)) < rate).sum(axis=-1).astype(float) for _ in range(2))
            ok = (xb.sum(axis=1) > 0) & (xc.sum(axis=1) > 0)
            interval = paired_ratio_interval(1.1 * yc.sum(axis=-1)[ok], xc[ok], yb.sum(axis=-1)[ok], xb[ok],
                                             orientation(LOWER), log=True)
            verdicts = interval_verdicts(interval.low, interval.high, guardrail_edge(guard, LOWER, "log_ratio"))
            rows.append(verdict_row("cost-of-pass", f"relative guardrail {name} C={cases} R={repeats}", verdicts,
                                    cases=cases, shape=name))
    return rows


def cost_of_pass_threshold_rows(series=S, cases_grid=(30, 100)):
    """A cost_of_pass threshold on the costs of `cost_rows`, pass rates U(0.4, 1) per case drawn apart from
    the costs (truth: mean cost / 0.7), thresholds below and above at a tenth of the truth: `decide`'s
    verdicts with no bound known (M7, its upper bound deciding nothing), `before_*` M7's alone (its upper
    bound misses on heavy tails), and for rare huge costs `bound_*` with the per-attempt bound known (the
    hull with the ratio of betting intervals, costs on [0, 150])."""
    rows = []
    for cases in cases_grid:
        for i, (name, repeats) in enumerate(COST_CELLS):
            rng = np.random.default_rng([19, cases, i])
            costs, mean_cost = cost_draws(name, rng, series, cases, repeats)
            rate = rng.uniform(0.4, 1.0, (series, cases, 1))
            passes = (rng.random((series, cases, repeats)) < rate).sum(axis=-1).astype(float)
            ok = passes.sum(axis=-1) > 0
            y, x = costs.sum(axis=-1)[ok], passes[ok]
            truth, cell = mean_cost / 0.7, f"{name} C={cases} R={repeats}"
            m7 = bounds(ratio_interval(y, x))
            sides = zip(threshold_rows("cost-of-pass", cell, m7, truth, truth / 10, True, cases=cases, shape=name),
                        threshold_rows("cost-of-pass", cell, m7, truth, truth / 10))
            known = None
            if name == "rare":
                known = threshold_rows("", cell, bounds(ratio_interval(y, x, "robust", None, RARE_BOUND,
                                                                       np.full_like(x, repeats))), truth, truth / 10)
            for side, (a, b) in enumerate(sides):
                row = dict(a, before_confirmed=b["confirmed"], before_refuted=b["refuted"])
                if known:
                    row.update(bound_confirmed=known[side]["confirmed"], bound_refuted=known[side]["refuted"])
                rows.append(row)
    return rows


# ---- unmeasured attempts, missing not at random: the failing attempts are the ones never measured

UNMEASURED_CELLS = (  # (how the failures go missing, share of hard cases, their rate, the others' rate)
    ("failures time out", 0.03, 0.0, 0.99),    # every failed attempt ends as an infrastructure error
    ("hard inputs cut", 0.04, 0.2, 0.99),      # a hard case's input is too large for the cap: no attempt measured
)


def unmeasured_series(rng, how: str, share: float, p_hard: float, p_good: float, cases: int, repeats: int):
    """One series: (per case [passes, measured attempts], per case unmeasured attempts), cases named c000..."""
    hard = rng.random(cases) < share
    k = rng.binomial(repeats, np.where(hard, p_hard, p_good))
    missing = repeats - k if how == "failures time out" else np.where(hard, repeats, 0)
    names = [f"c{i:03d}" for i in range(cases)]
    measured = {name: [int(kk), int(repeats - m)] for name, kk, m in zip(names, k, missing) if repeats - m > 0}
    return measured, {name: int(m) for name, m in zip(names, missing) if m}


def unmeasured_verdicts(measured: dict, missing: dict, questions, salt: str = "grid") -> list[str]:
    """The verdict `decide` gives each threshold question on one series, through the functions it calls: the
    5% rule over every unmeasured attempt, the measured cell, and the cell again with the unmeasured attempts
    imputed against and for the claim (`missing.held`). test_validation holds it to `decide_table`."""
    from pytest_aqven.stats import missing as imputation  # noqa: PLC0415
    from pytest_aqven.stats.evidence import EvidenceTable  # noqa: PLC0415
    from pytest_aqven.stats.verdicts import INFRA_SHARE_LIMIT, threshold_cell  # noqa: PLC0415

    kinds = {"r": "binary"}
    unmeasured = sum(missing.values())
    planned = unmeasured + sum(n for _, n in measured.values())
    if unmeasured / planned > INFRA_SHARE_LIMIT:
        return ["invalid"] * len(questions)
    data = {"attempts": planned, "settled": planned, "infra_errors": unmeasured, "variants": {"v": {"r": measured}},
            "unmeasured": {"budget_cut": 0, "cancelled": 0, "variants": {"v": missing}}}
    table = EvidenceTable(data, kinds)
    info = metric_info("r", kinds)
    low_end, high_end = (single(imputation.ImputedTable(table, {("v", "r"): high}, ("v",)).sample("v", info), salt)
                         for high in (False, True))
    measured_estimate = single(table.sample("v", info), salt)
    out = []
    for question in questions:
        worst, best = (low_end, high_end) if question.above is not None else (high_end, low_end)
        cells = [threshold_cell(question, "v", estimate, HIGHER, "robust") for estimate in (measured_estimate, worst, best)]
        out.append(imputation.held(*cells).verdict if missing else cells[0].verdict)
    return out


def unmeasured_rows(series=S, cases=(40, 100, 200), repeats=10):
    """The failing attempts are the unmeasured ones: P(confirmed) and P(refuted) at the truth (the mean over
    all cases, measured or not), and what the measured attempts alone confirmed (`measured_confirmed`)."""
    rows = []
    for how, share, p_hard, p_good in UNMEASURED_CELLS:
        truth = share * p_hard + (1 - share) * p_good
        questions = [type(q)("r", q.above, q.below, q.margin) for q in thresholds(truth, 0.02)]
        for c in cases:
            rng = np.random.default_rng([13, c, int(share * 100), int(p_hard * 10)])
            verdicts, alone = [], []
            for _ in range(series):
                measured, missing = unmeasured_series(rng, how, share, p_hard, p_good, c, repeats)
                verdicts.append(unmeasured_verdicts(measured, missing, questions))
                alone.append(unmeasured_verdicts(measured, {}, questions))
            got, before = np.array(verdicts), np.array(alone)
            for i, question in enumerate(questions):
                above = question.above is not None
                rows.append(verdict_row("unmeasured", f"{how} C={c} R={repeats} {share:.0%} at {p_hard}, rest "
                                        f"{p_good} {'above' if above else 'below'}", got[:, i], above,
                                        bound="above" if above else "below",
                                        measured_confirmed=float(np.mean(before[:, i] == "pass")),
                                        measured_refuted=float(np.mean(before[:, i] == "fail")),
                                        invalid=float(np.mean(got[:, i] == "invalid"))))
    return rows
