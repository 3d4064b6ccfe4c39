"""The vectorised attempt table gives exactly the per-attempt rules of reference §3 (written out here)."""

import random

import numpy as np

from pytest_aqven.stats import Attempt, CheckValue
from pytest_aqven.stats.samples import (
    COUNTED_OUTCOMES,
    SCORED_STATES,
    SERIES_METRICS,
    AttemptTable,
    attempt_passed,
    metric_info,
)

KINDS = {"promises": "binary", "critique": "continuous", "stars": "ordinal"}
OUTCOMES = ("ok", "ok", "ok", "model_fail", "schema_invalid", "refusal", "infra_error", "budget_cut", "cancelled")


def _reference(attempts, variant, info):
    """One attempt at a time, as the rules read: (cases, per-case values, per-case passes)."""
    keyed = {}
    for a in attempts:
        if a.variant != variant:
            continue
        settled = a.finished and a.outcome != "cancelled"
        counted = a.finished and a.outcome in COUNTED_OUTCOMES
        name, value = info.name, None
        if name == "infra_error_rate":
            value = float(a.outcome == "infra_error") if settled else None
        elif not counted:
            value = None
        elif name == "success_rate":
            value = float(attempt_passed(a, KINDS))
        elif name == "schema_valid_first_try":
            value = None if a.schema_valid_first_try is None else float(a.schema_valid_first_try)
        elif name == "cost_usd":
            value = a.cost_usd
        elif name == "cost_of_pass":
            value = None if a.cost_usd is None else (a.cost_usd, float(attempt_passed(a, KINDS)))
        elif info.shape == "quantile":
            value = a.latency_ms
        else:
            check = a.checks.get(name)
            if check is not None and check.state in SCORED_STATES:
                if info.shape == "rate":
                    value = float(check.state == "passed")
                elif check.value is not None:
                    value = float(check.value)
        if value is not None:
            keyed.setdefault(a.case, []).append((a.repeat, value))
    cases = sorted(keyed)
    groups = [[v for _, v in sorted(keyed[c], key=lambda item: item[0])] for c in cases]
    if info.shape == "ratio":
        return cases, [[c for c, _ in g] for g in groups], [[p for _, p in g] for g in groups]
    return cases, groups, None


def _messy_attempts(seed):
    rng = random.Random(seed)
    out = []
    for variant in ("a", "b", "c"):
        for case in range(rng.randint(5, 15)):
            for repeat in range(1, rng.randint(1, 6) + 1):
                if rng.random() < 0.1:
                    continue  # a repeat that never ran
                checks = {}
                if rng.random() < 0.9:
                    checks["promises"] = CheckValue(rng.choice(["passed", "failed", "error", "skipped"]), None)
                if rng.random() < 0.8:
                    checks["critique"] = CheckValue(rng.choice(["passed", "failed", "error"]),
                                                    rng.choice([None, rng.random(), 3 * rng.random()]))
                if rng.random() < 0.5:
                    checks["stars"] = CheckValue("passed", float(rng.randint(1, 5)))
                out.append(Attempt(
                    variant, f"case-{rng.randint(0, 40):02d}" if case % 4 == 0 else f"c{case:02d}", repeat,
                    rng.choice(OUTCOMES), rng.choice([None, None, True, False]), checks,
                    cost_usd=rng.choice([None, 0.0, rng.random() / 100]),
                    latency_ms=rng.choice([None, 100 + 900 * rng.random()]),
                    schema_valid_first_try=rng.choice([None, True, False]),
                    finished=rng.random() < 0.95,
                ))
    rng.shuffle(out)
    return out


def test_table_samples_match_the_per_attempt_rules():
    for seed in range(20):
        attempts = _messy_attempts(seed)
        table = AttemptTable(attempts, KINDS)
        for variant in ("a", "b", "c", "absent"):
            for name in list(SERIES_METRICS) + list(KINDS) + ["unknown_check"]:
                info = metric_info(name, KINDS)
                sample = table.sample(variant, info)
                cases, groups, passes = _reference(attempts, variant, info)
                assert list(sample.cases) == cases, (seed, variant, name)
                assert [list(v) for v in sample.values] == groups, (seed, variant, name)
                if passes is not None:
                    assert [list(p) for p in sample.passes] == passes
                assert np.allclose(sample.sums(), [sum(g) for g in groups], rtol=1e-12, atol=0)


def test_table_counts_and_order_independence():
    attempts = _messy_attempts(7)
    table = AttemptTable(attempts, KINDS)
    assert table.finished == sum(a.finished for a in attempts)
    assert int(table.settled.sum()) == sum(a.finished and a.outcome != "cancelled" for a in attempts)
    shuffled = AttemptTable(list(reversed(attempts)), KINDS)
    info = metric_info("critique", KINDS)
    assert [list(v) for v in shuffled.sample("b", info).values] == [list(v) for v in table.sample("b", info).values]
    empty = AttemptTable([], KINDS).sample("a", metric_info("success_rate", KINDS))
    assert empty.n_cases == 0 and empty.n_attempts == 0


def test_subset_reorders_whole_cases():
    attempts = _messy_attempts(3)
    sample = AttemptTable(attempts, KINDS).sample("a", metric_info("cost_of_pass", KINDS))
    names = list(reversed(sample.cases))[::2]
    part = sample.subset(names)
    where = {c: i for i, c in enumerate(sample.cases)}
    assert [list(v) for v in part.values] == [list(sample.values[where[c]]) for c in names]
    assert [list(p) for p in part.passes] == [list(sample.passes[where[c]]) for c in names]
