"""The V11 cells of tests/stats/validation.py (bounded scales, perfect agreement, rare events) decided one
series at a time by `decide_table`, the verdict's own path, so the same script measures any checkout.

Run: PYTHONPATH=<checkout> python bench/bounded_cells.py [series per cell, default 2000]

Every cell puts the truth on the question's edge: P(confirmed) and P(refuted) are the two one-sided error
rates (each should stay at or below 0.025), except the A/A row, where P(confirmed) is power. A checkout
whose SeriesFacts has no check_scales decides the 1..5 scores without their declared range."""
import importlib.util
import sys
from pathlib import Path

import numpy as np

from pytest_aqven.stats import Pair, SeriesFacts, Threshold
from pytest_aqven.stats.evidence import EvidenceTable
from pytest_aqven.stats.verdicts import decide_table

_spec = importlib.util.spec_from_file_location("sim", Path(__file__).resolve().parents[1] / "tests/stats/sim.py")
sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sim)
SCALED = "check_scales" in SeriesFacts.__dataclass_fields__


def evidence(variants: dict, s: int, kinds: dict) -> EvidenceTable:
    data = {"attempts": 1, "settled": 1, "infra_errors": 0, "variants": {
        v: {m: {f"c{i:03d}": x[s, i].tolist() for i in range(x.shape[1])} for m, x in metrics.items()}
        for v, metrics in variants.items()}}
    return EvidenceTable(data, kinds)


def rates(k, n):
    return np.stack([k, n], axis=-1)


def decided(question, variants, kinds, scales, series):
    extra = {"check_scales": scales} if SCALED else {}
    facts = SeriesFacts("sid", "holdout", tuple(variants), kinds, salt="bench", **extra)
    verdicts = np.array([decide_table(question, evidence(variants, s, kinds), facts).cells[0].verdict
                         for s in range(series)])
    return float(np.mean(verdicts == "pass")), float(np.mean(verdicts == "fail"))


def cells(series):
    for cases in (12, 30):
        scores, truth = sim.ceiling_scores(np.random.default_rng([15, cases]), series, cases, 5)
        for name, kind, x, at, scales in (
                ("continuous 1..5", "continuous", scores, truth, {"x": (1.0, 5.0)}),
                ("ordinal 1..5", "ordinal", scores, truth, {"x": (1.0, 5.0)}),
                ("rescaled [0, 1]", "continuous", (scores - 1) / 4, (truth - 1) / 4, {})):
            yield f"ceiling {name} C={cases}", decided(Threshold("x", above=at, variant="v"), {"v": {"x": x}},
                                                        {"x": kind}, scales, series)
    for cases in (30, 129):
        bound = 1 - 0.025 ** (1 / cases)
        kb, kc, n = sim.broken_cases(np.random.default_rng([16, cases]), bound * 1.001, series, cases, 5)
        pair = Pair("noninferior", "base", "cand", "r", bound * 1.001)
        yield f"agreement worst case C={cases}", decided(pair, {"base": {"r": rates(kb, n)}, "cand": {"r": rates(kc, n)}},
                                                         {"r": "binary"}, {}, series)
    kb, kc, n = sim.broken_cases(np.random.default_rng(18), 0.0, series, 129, 5)
    yield "A/A all pass NI 0.1 C=129 (power)", decided(Pair("noninferior", "base", "cand", "r", 0.1),
                                                      {"base": {"r": rates(kb, n)}, "cand": {"r": rates(kc, n)}},
                                                      {"r": "binary"}, {}, series)
    for mu in (0.99, 0.995):
        rng = np.random.default_rng([17, 100, int(mu * 1000)])
        k, n = sim.beta_binomial(rng, mu, 0.3, series, 100, 10)
        yield f"rare mu={mu} rho=0.3 C=100", decided(Threshold("r", above=mu, variant="v"), {"v": {"r": rates(k, n)}},
                                                     {"r": "binary"}, {}, series)
        k, n, truth = sim.hard_case_mixture(rng, 0.01, 0.5, (mu - 0.005) / 0.99, series, 100, 10)
        yield f"rare mu={mu} 1% at 0.5 C=100", decided(Threshold("r", above=truth, variant="v"),
                                                       {"v": {"r": rates(k, n)}}, {"r": "binary"}, {}, series)


if __name__ == "__main__":
    series = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"| cell ({series} series) | P(confirmed) | P(refuted) |\n|---|---|---|")
    for cell, (confirmed, refuted) in cells(series):
        print(f"| {cell} | {confirmed:.4f} | {refuted:.4f} |", flush=True)
