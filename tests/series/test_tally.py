"""The controller's per-case tallies decide exactly what the attempt records decide: the same samples,
verdicts, sentences, finding data and report figures, on random series (records in any order, repeated)."""
from __future__ import annotations

import difflib
import gzip
import itertools
import json
import math
import random
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from pytest_aqven import stats
from pytest_aqven.record import AttemptRecord
from pytest_aqven.report import data
from pytest_aqven.series.tally import SeriesTally
from pytest_aqven.series.to_stats import to_attempt
from pytest_aqven.stats import evidence
from pytest_aqven.stats.samples import SERIES_METRICS, AttemptTable, metric_info
from pytest_aqven.stats.verdicts import decide_table

# the finding data six random series gave, one "# seed N" line before each (test_the_finding_data_is_...)
GOLDEN = Path(__file__).parent / "data" / "finding-data.yaml.gz"
KINDS = {"label": "binary", "tone": "binary", "score": "continuous", "stars": "ordinal"}
OUTCOMES = ["ok"] * 40 + ["model_fail", "schema_invalid", "refusal", "infra_error", "budget_cut", "cancelled"]


def _check(rng: random.Random, kind: str, outcome: str) -> dict:
    if outcome not in ("ok", "model_fail", "schema_invalid", "refusal"):
        return {"state": "skipped", "value": None, "reason": None}
    if kind == "binary":
        state = rng.choice(["passed"] * 6 + ["failed"] * 3 + ["error", "skipped"])
        value = {"passed": 1.0, "failed": 0.0}.get(state)
    else:
        state = rng.choice(["passed"] * 6 + ["failed"] * 2 + ["skipped"])
        value = None if state == "skipped" or rng.random() < 0.05 else \
            (round(rng.uniform(0, 1), 4) if kind == "continuous" else float(rng.randint(1, 5)))
    return {"state": state, "value": value, "reason": None}


def records(seed: int, variants=("a", "b", "c"), cases: int = 14, repeats: int = 4, ok: int = 40) -> list[dict]:
    """`ok`: the weight of "ok" among the outcomes drawn, each other outcome weighing 1 (every 4th seed: 10)."""
    outcomes = ["ok"] * ok + OUTCOMES[40:]
    rng = random.Random(seed)
    skill = {v: rng.uniform(0.5, 0.95) for v in variants}
    out = []
    for v in variants:
        for c in range(cases):
            for r in range(1, repeats + 1):
                if rng.random() < 0.05:
                    continue                      # an attempt that never reported
                outcome = rng.choice(outcomes if seed % 4 else OUTCOMES[30:])   # every 4th: many errors
                checks = {k: _check(rng, kind, outcome) for k, kind in KINDS.items() if rng.random() < 0.95}
                if outcome == "ok" and "label" in checks and checks["label"]["state"] in ("passed", "failed"):
                    ok = rng.random() < skill[v]
                    checks["label"] = {"state": "passed" if ok else "failed", "value": float(ok), "reason": None}
                counted = outcome in ("ok", "model_fail", "schema_invalid", "refusal")
                passed = None if not counted else (outcome == "ok" and all(
                    x["state"] == "passed" for k, x in checks.items() if KINDS[k] == "binary" and x["state"] != "skipped"))
                if counted and rng.random() < 0.03:
                    passed = None                 # an older record: statistics derive it from the checks
                unpriced = rng.choice([0] * 9 + [1])
                out.append({
                    "series_id": "s1", "experiment": "e", "variant": v, "case": f"case_{c:03d}", "repeat": r,
                    "split": "holdout", "outcome": outcome, "passed": passed, "checks": checks,
                    "cost_usd": None if rng.random() < 0.03 else round(rng.uniform(0.0001, 0.01), 6),
                    "check_cost_usd": rng.choice([0.0, 0.0, 0.00031]), "unpriced_calls": unpriced,
                    **({} if rng.random() < 0.2 else {"cost_known": unpriced == 0}),
                    "latency_ms": None if rng.random() < 0.03 else rng.uniform(10, 900),
                    "schema_valid_first_try": rng.choice([True, True, False, None]),
                    "models": {"n": f"m-{v}"}, "started_at": 1.7e9 + rng.random() * 100,
                    "finished_at": 1.7e9 + 100 + rng.random() * 100, "reused": rng.random() < 0.1,
                    "root": "/p", "file_nodeid": "p/experiments/e/experiment.yaml"})
    rng.shuffle(out)
    out += [dict(r) for r in rng.sample(out, 5)]      # reported twice (a rerun): counted once
    return out


def one_per_attempt(recs: list[dict]) -> list[dict]:
    by: dict[tuple, dict] = {}
    for r in recs:
        by.setdefault((r["variant"], r["case"], r["repeat"]), r)
    return list(by.values())


def facts(variants=("a", "b", "c"), split="holdout", total=168) -> stats.SeriesFacts:
    return stats.SeriesFacts(series_id="s1", split=split, variants=tuple(variants), check_kinds=KINDS,
                             total_attempts=total, family="robust", salt="pkg/e")


QUESTIONS = [
    stats.Threshold("label", above=0.6, margin=0.02),
    stats.Threshold("score", above=0.4, margin=0.05, variant="b"),
    stats.Threshold("latency_p95_ms", below=800.0),
    stats.Pair("noninferior", "a", "b", "label", 0.1, guardrails=(
        stats.Guardrail("cost_of_pass", 0.2, relative=True), stats.Guardrail("latency_p50_ms", 50.0),
        stats.Guardrail("cost_usd", 0.1, relative=True), stats.Guardrail("stars", 0.5))),
    stats.Pair("compare", "a", "c", "success_rate", 0.0, guardrails=(stats.Guardrail("score", 0.1, relative=True),)),
    stats.Look(),
]


def sample_data_per_case(sample) -> dict:
    """evidence.sample_data as it was written first, case by case (the finding's data must not change)."""
    out = {}
    for i, case in enumerate(sample.cases):
        values = sample.values[i]
        if sample.info.shape == "rate":
            out[case] = [evidence._number(values.sum()), len(values)]
        elif sample.info.shape == "ratio":
            out[case] = [[evidence._number(c), evidence._number(p)] for c, p in zip(values, sample.passes[i])]
        else:
            out[case] = [evidence._number(v) for v in values]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_the_tally_decides_what_the_records_decide(seed):
    recs = records(seed, ok=80)       # under 5% unmeasured: decided, with the unmeasured counted against
    unique = one_per_attempt(recs)
    f = facts()
    by_records = AttemptTable([to_attempt(AttemptRecord.from_wire(r), f.salt) for r in unique], KINDS)
    tally = SeriesTally.of(recs)
    by_tally = tally.table(f.salt, KINDS)
    assert by_tally.tallies() == by_records.tallies()
    assert by_tally.unmeasured() == by_records.unmeasured()
    for variant in ("a", "b", "c", "missing"):
        for name in [*SERIES_METRICS, *KINDS, "unknown"]:
            info = metric_info(name, KINDS)
            x, y = by_records.sample(variant, info), by_tally.sample(variant, info)
            assert x.cases == y.cases and np.array_equal(x.sizes, y.sizes), (variant, name)
            assert x.flat.dtype == y.flat.dtype and np.array_equal(x.flat, y.flat), (variant, name)
            assert (x.flat_passes is None) == (y.flat_passes is None), (variant, name)
            if x.flat_passes is not None:
                assert np.array_equal(x.flat_passes, y.flat_passes), (variant, name)
            assert json.dumps(evidence.sample_data(y)) == json.dumps(sample_data_per_case(x))
    decided = 0
    for question in QUESTIONS:
        for split in ("holdout", "dev") if seed == 1 else ("holdout",):
            ff = facts(split=split, total=len(unique))
            a, b = decide_table(question, by_records, ff), decide_table(question, by_tally, ff)
            assert repr(a) == repr(b)
            decided += a.state not in (None, "invalid")
            assert json.dumps(evidence.sufficient_data(by_records, ff, a.metrics)) == \
                json.dumps(evidence.sufficient_data(by_tally, ff, b.metrics))
    assert decided or seed % 4 == 0     # decided, not stopped at an early invalid (but for the error-heavy ones)


def stability_of_records(records: list[dict], repeats: int) -> dict[str, dict]:
    """report/data.stability as it read the records (before the tallies)."""
    if repeats < 2:
        return {}
    per: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        if r["passed"] is not None:
            per[r["variant"]][r["case"]].append(bool(r["passed"]))
    out = {}
    for variant in sorted(per):
        runs = [v for v in per[variant].values() if len(v) >= 2]
        ks = [v for v in per[variant].values() if len(v) >= repeats]
        pass_k = (sum(math.comb(sum(v), repeats) / math.comb(len(v), repeats) for v in ks) / len(ks)) if ks else None
        out[variant] = {"always": sum(all(v) for v in runs), "never": sum(not any(v) for v in runs),
                        "flaky": sum(any(v) and not all(v) for v in runs), "pass_hat_k": data._num(pass_k), "k": repeats}
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_tally_reports_what_the_records_report(seed):
    from decimal import Decimal

    recs = records(100 + seed)
    unique = one_per_attempt(recs)
    tally = SeriesTally.of(recs)
    for repeats in (1, 2, 4):
        assert data.stability(tally, repeats) == stability_of_records(unique, repeats)
    assert tally.done == len(unique)
    assert tally.spend == sum((r["cost_usd"] or 0.0) + (r.get("check_cost_usd") or 0.0) for r in unique)
    assert tally.cost_sum + tally.check_cost_sum == sum(r.get("cost_usd") or 0.0 for r in unique) + \
        sum(r.get("check_cost_usd") or 0.0 for r in unique)
    assert tally.spend_exact == sum(Decimal(repr(r["cost_usd"] or 0.0)) + Decimal(repr(r.get("check_cost_usd") or 0.0))
                                    for r in unique)
    assert (tally.reused, tally.passed, tally.failed_checks) == (
        sum(1 for r in unique if r.get("reused")), sum(1 for r in unique if r["passed"]),
        sum(1 for r in unique if r["passed"] is False))
    assert (tally.infra, tally.infra_errors, tally.unpriced_calls, tally.unpriced_attempts) == (
        sum(1 for r in unique if r["outcome"] in data.INFRA), sum(1 for r in unique if r["outcome"] == "infra_error"),
        sum(r["unpriced_calls"] for r in unique), sum(1 for r in unique if r["unpriced_calls"]))
    assert (tally.started_at, tally.finished_at) == (min(r["started_at"] for r in unique),
                                                     max(r["finished_at"] for r in unique))
    assert tally.case_names() == {r["case"] for r in unique}
    assert {v: sorted(m) for v, m in tally.models.items()} == \
        {v: sorted({m for r in unique if r["variant"] == v for m in r["models"].values()}) for v in "abc"}
    assert tally.records is None and SeriesTally.of(recs, keep_records=True).records == [AttemptRecord.from_wire(r) for r in unique]


def test_a_record_without_times_leaves_the_span_alone():
    unique = one_per_attempt(records(9))
    timeless = [{**unique[0], "started_at": None, "finished_at": None}, *unique[1:]]
    tally = SeriesTally.of(timeless)
    assert tally.done == len(unique)
    assert (tally.started_at, tally.finished_at) == (min(r["started_at"] for r in unique[1:]),
                                                     max(r["finished_at"] for r in unique[1:]))


def test_a_tally_keeps_no_record():
    """What it keeps grows with cases, not with the text of the attempts."""
    tally = SeriesTally.of(records(7))
    assert tally.records is None
    assert not any(isinstance(v, dict) and "checks" in v for v in vars(tally).values())


def test_the_finding_data_is_byte_for_byte_what_it_was():
    """The finding's data written from the tallies of six random series: the bytes of GOLDEN, which main 0645b57
    wrote (the tallies then read with numpy, the finding's number lists written by repr) with the unmeasured
    attempts per case added since under their own key. A change shows as a diff of the lines that moved."""
    from pytest_aqven.findings import files

    golden = gzip.decompress(GOLDEN.read_bytes()).decode().split("# seed ")[1:]
    assert len(golden) == 6
    for seed, expected in enumerate(golden):
        tally = SeriesTally.of(records(seed, cases=30, repeats=20 if seed % 2 else 3))
        table = tally.table(facts().salt, KINDS)
        metrics = {v: dict.fromkeys([*SERIES_METRICS, *KINDS]) for v in "abc"}
        written = evidence.sufficient_data(table, facts(), metrics)
        assert written["unmeasured"]["variants"]
        text = f"{seed}\n" + files.finding_text({"data": written})
        if text != expected:        # a diff of the lines that moved (pytest's own diff of 140 KB would take minutes)
            diff = difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "golden", "written")
            pytest.fail("".join(itertools.islice(diff, 60)))


def test_repeat_numbers_beyond_int64_masks_are_read_case_by_case():
    """Masks are shifted as int64 numbers: a repeat numbered 63 or more takes the Python path, same samples."""
    recs = records(3, cases=6, repeats=3)
    for r in recs:
        r["repeat"] += 62 if r["case"] < "case_003" else 0
    f = facts()
    by_records = AttemptTable([to_attempt(AttemptRecord.from_wire(r), f.salt) for r in one_per_attempt(recs)], KINDS)
    table = SeriesTally.of(recs).table(f.salt, KINDS)
    assert table._wide
    for name in [*SERIES_METRICS, *KINDS]:
        x, y = by_records.sample("a", metric_info(name, KINDS)), table.sample("a", metric_info(name, KINDS))
        assert x.cases == y.cases and np.array_equal(x.flat, y.flat) and np.array_equal(x.sizes, y.sizes), name
    assert table.sample("a", metric_info("cost_usd", KINDS)) is table.sample("a", metric_info("cost_usd", KINDS))


def test_the_series_cost_bound_is_the_largest_of_the_attempts_whose_cost_counts():
    """SeriesFacts.cost_bound: the largest attempt bound, none when one attempt whose cost counts has none; an
    attempt whose cost does not count (unpriced, an infrastructure error) does not take the bound away."""
    unique = [r for r in one_per_attempt(records(3)) if r["outcome"] == "ok" and r["cost_usd"] is not None
              and r.get("cost_known", r["unpriced_calls"] == 0)][:6]
    bounded = [{**r, "cost_bound_usd": 0.02 + i / 1000} for i, r in enumerate(unique)]
    assert SeriesTally.of(bounded).cost_bound() == pytest.approx(0.025)
    assert SeriesTally.of([*bounded[:-1], unique[-1]]).cost_bound() is None
    error = {**unique[-1], "outcome": "infra_error", "passed": None}
    assert SeriesTally.of([*bounded[:-1], error]).cost_bound() == pytest.approx(0.024)
