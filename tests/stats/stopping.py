"""Optional stopping (`--aqven-stop-early`) over the validation grids: every series looks after each case,
stops where the betting sequence decides (stats/early.py), else is decided at its planned cases as today.

A cell puts the truth on the question's edge (the two tails: P(confirmed), P(refuted), each at most 2.5%)
or one or two margins past it on the good side (the cases used: median, 90th percentile, share of the
planned cases). The tests in test_early.py assert the rows; the report's table is `rows(2000)` printed.
"""

from __future__ import annotations

import numpy as np

from pytest_aqven.stats import early
from pytest_aqven.stats.edges import threshold_edge, threshold_verdicts
from pytest_aqven.stats.estimates import rate_interval
from pytest_aqven.stats.model import Guardrail, Pair, Threshold
from pytest_aqven.stats.pairs import contrast, contrast_scale, guardrail_edge, orientation, primary_edge
from pytest_aqven.stats.samples import HIGHER, LOWER

from .sim import beta_binomial, hard_case_mixture, logit_pair
from .validation import (
    EDGE_PAIRS,
    MARGIN,
    MIXTURES,
    edge_pair_verdicts,
    edge_question,
    pair_data,
    threshold_data,
    threshold_interval,
)

PLANNED = (30, 100, 200)


def combined(final: np.ndarray, clear: np.ndarray, fail: np.ndarray, planned: int) -> tuple[np.ndarray, np.ndarray]:
    """(the verdict of every series, "pass" / "fail" / "unclear", and the cases it used) when it stops at the
    first look before its planned cases that decides it, else takes `final`, the verdict at its planned cases."""
    look, confirmed = early.stop_look([clear], [fail])
    stopped = (look > 0) & (look < planned)
    verdicts = np.where(stopped, np.where(confirmed, "pass", "fail"), final)
    return verdicts, np.where(stopped, look, planned)


def row(test: str, cell: str, verdicts: np.ndarray, used: np.ndarray, planned: int, good_above: bool = True,
        **extra) -> dict:
    confirmed, refuted = float(np.mean(verdicts == "pass")), float(np.mean(verdicts == "fail"))
    return dict(test=test, cell=cell, confirmed=confirmed, refuted=refuted, planned=planned,
                median=float(np.median(used)), p90=float(np.quantile(used, 0.9)),
                share=float(np.median(used)) / planned, **extra)


def threshold_rows(test: str, cell: str, values: np.ndarray, final_interval, truth: float, planned: int,
                   margin: float = MARGIN, past: float = 0.0) -> list[dict]:
    """A threshold above and one below whose edges lie `past` margins on the bad side of `truth` (0: on it)."""
    rows = []
    for question in (Threshold("x", above=truth - margin - past * margin, margin=margin),
                     Threshold("x", below=truth + margin + past * margin, margin=margin)):
        above = question.above is not None
        final = threshold_verdicts(question, final_interval.low, final_interval.high)
        clear, fail = early.clear_and_fail(values, (0.0, 1.0), threshold_edge(question), HIGHER if above else LOWER,
                                           planned)
        verdicts, used = combined(final, clear, fail, planned)
        rows.append(row(test, f"{cell} {'above' if above else 'below'}", verdicts, used, planned, above, past=past))
    return rows


def pair_rows(test: str, cell: str, question: Pair | Guardrail, shape: str, data, planned: int,
              past: float = 0.0) -> dict:
    direction = question.direction or HIGHER
    sign = orientation(direction)
    relative = question.margin if isinstance(question, Guardrail) and question.relative else None
    if shape == "rate":
        kb, kc, n = data
        mb, mc = kb / n, kc / n
    else:
        mb, mc = (d.mean(axis=-1) for d in data)
    per_case, span = contrast(mc, mb, sign, contrast_scale(sign, relative))
    edge = primary_edge(question) if isinstance(question, Pair) else guardrail_edge(question, direction, "rate")
    final = edge_pair_verdicts(shape, question, data, "robust")
    clear, fail = early.clear_and_fail(per_case, span, edge, HIGHER, planned)
    verdicts, used = combined(final, clear, fail, planned)
    return row(test, cell, verdicts, used, planned, past=past)


def edge_rows(series: int, planned_grid=PLANNED) -> list[dict]:
    """Truth on the edge: thresholds on rates and scores, the hard-case mixtures, every paired kind of
    V5-edge (compare, noninferior, relative guardrails, both directions; their nulls)."""
    rows = []
    for planned in planned_grid:
        for kind in ("rate", "score"):
            rng = np.random.default_rng([45, planned, len(kind)])
            data, truth = threshold_data(kind, rng, series, planned)
            values = data[0] / data[1] if kind == "rate" else data.mean(axis=-1)
            rows += threshold_rows("edge", f"threshold {kind} C={planned}", values,
                                   threshold_interval(kind, data, "robust"), truth, planned)
        for share, p_hard, p_good in MIXTURES:
            rng = np.random.default_rng([46, planned, int(share * 100)])
            k, n, mu = hard_case_mixture(rng, share, p_hard, p_good, series, planned, 10)
            rows += threshold_rows("mixture", f"{share:.0%} at {p_hard}, rest {p_good} C={planned}", k / n,
                                   rate_interval(k, n, "robust"), mu, planned, margin=0.02)
        for i, (kind, shape, direction, p_b, p_c) in enumerate(EDGE_PAIRS):
            rng = np.random.default_rng([47, planned, i])
            question = edge_question(kind, direction, p_b, p_c)
            rows.append(pair_rows("pair", f"{kind} {shape} {direction} {p_b}->{p_c} C={planned}", question, shape,
                                  pair_data(shape, p_b, p_c, rng, series, planned), planned))
        rng = np.random.default_rng([48, planned])     # the paired null: an A/A at a margin
        data = logit_pair(rng, 0.8, 0.8, 1.0, 0.5, series, planned, 10)
        for kind in ("compare", "noninferior"):
            question = Pair(kind, "base", "cand", "x", 0.0, HIGHER)
            rows.append(pair_rows("pair", f"A/A {kind} at 0 C={planned}", question, "rate", data, planned))
    return rows


def past_rows(series: int, planned_grid=PLANNED) -> list[dict]:
    """Cases used when the truth lies on the edge, one margin past it and two margins past it (a rate
    threshold above and below, mu = 0.85, R = 10; a compare on paired rates)."""
    rows = []
    for planned in planned_grid:
        rng = np.random.default_rng([49, planned])
        k, n = beta_binomial(rng, 0.85, 0.1, series, planned, 10)
        final = rate_interval(k, n, "robust")
        for past in (0.0, 1.0, 2.0):
            rows += threshold_rows("used", f"threshold rate C={planned}", k / n, final, 0.85, planned, past=past)
        for past in (0.0, 1.0, 2.0):
            rng = np.random.default_rng([50, planned, int(past)])
            question = Pair("compare", "base", "cand", "x", MARGIN, HIGHER)
            data = logit_pair(rng, 0.70, 0.70 + MARGIN * (1 + past), 1.0, 0.5, series, planned, 10)
            rows.append(pair_rows("used", f"compare rate 0.70->{0.70 + MARGIN * (1 + past):.2f} C={planned}",
                                  question, "rate", data, planned, past=past))
    return rows


if __name__ == "__main__":     # the report's table: python -m tests.stats.stopping [series]
    import sys
    n_series = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"{'cell':58} {'past':>4} {'conf':>6} {'ref':>6} {'median':>6} {'p90':>6} {'share':>6}")
    for r in edge_rows(n_series) + past_rows(n_series):
        print(f"{r['test'] + ' ' + r['cell']:58} {r['past']:4.0f} {r['confirmed']:6.4f} {r['refuted']:6.4f} "
              f"{r['median']:6.0f} {r['p90']:6.0f} {r['share']:6.2f}")
