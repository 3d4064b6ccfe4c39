"""The same attempts give the same verdict, whatever the series id, the arrival order or the workers."""

import random

import numpy as np
import pytest

from pytest_aqven.stats import Attempt, CheckValue, Guardrail, Pair, SeriesFacts, Threshold, decide

KINDS = {"promises": "binary", "critique": "continuous"}


def _attempts(seed=7, cases=26, repeats=3):
    rng = np.random.default_rng(seed)
    out = []
    for variant, shift in (("large", 0.0), ("small", -0.03)):
        for i in range(cases):
            p = rng.uniform(0.6, 1.0)
            for r in range(1, repeats + 1):
                ok = bool(rng.random() < p + shift)
                score = float(np.clip(rng.normal(0.8 + shift, 0.1), 0, 1))
                out.append(Attempt(variant, f"case_{i:02d}", r, "ok", ok,
                                   {"promises": CheckValue("passed" if ok else "failed", float(ok)),
                                    "critique": CheckValue("passed", score)},
                                   cost_usd=float(rng.uniform(1e-4, 6e-4)), latency_ms=float(rng.integers(300, 900))))
    return out


THRESHOLD = Threshold("promises", above=0.6, margin=0.02, variant="small")
PAIR = Pair("noninferior", "large", "small", "critique", 0.05, guardrails=(Guardrail("cost_of_pass", 0.0001),))
# the paired bootstrap (M6) of a latency guardrail: 10,000 resamples a verdict, so behind the slow marker
BOOTSTRAP = Pair("noninferior", "large", "small", "critique", 0.05,
                 guardrails=(Guardrail("latency_p50_ms", 0.2, relative=True),))


@pytest.mark.parametrize("question", [THRESHOLD, PAIR, pytest.param(BOOTSTRAP, marks=pytest.mark.slow)],
                         ids=["threshold", "pair", "bootstrap"])
def test_the_same_attempts_give_the_same_verdict_under_200_series_ids_and_arrival_orders(question):
    attempts = _attempts()
    shuffler = random.Random(0)
    seen = set()
    for i in range(200):
        facts = SeriesFacts(f"{i:08x}-0000-4000-8000-{shuffler.getrandbits(48):012x}", "holdout",
                            ("large", "small"), KINDS, total_attempts=len(attempts), salt="helpdesk/exp")
        arrived = attempts[:]
        shuffler.shuffle(arrived)
        verdict = decide(question, arrived, facts)
        seen.add(repr((verdict.state, verdict.reason, verdict.text, verdict.cells, verdict.metrics)))
    assert len(seen) == 1


def test_the_case_order_depends_on_the_experiment_not_on_the_series():
    attempts = _attempts(seed=3, cases=30)
    q = Threshold("critique", above=0.5, margin=0.0, variant="small")
    one = decide(q, attempts, SeriesFacts("a", "holdout", ("large", "small"), KINDS, salt="helpdesk/exp"))
    two = decide(q, attempts, SeriesFacts("b", "holdout", ("large", "small"), KINDS, salt="helpdesk/exp"))
    other = decide(q, attempts, SeriesFacts("a", "holdout", ("large", "small"), KINDS, salt="helpdesk/other"))
    assert one.cells == two.cells
    assert one.cells[0].estimate.betting_low != other.cells[0].estimate.betting_low
