"""Statistics benchmarks (statistics.md §12 V10), printed, never asserted.

    PYTHONPATH=. python bench/bench_stats.py [--against REV] [--no-grids]

Prints: the time of one verdict per method at C = 100, R = 20 (model and robust family), a full
`decide` (every metric of both variants, 4,000 attempts), M6 with B = 10,000 next to
scipy.stats.bootstrap doing the same paired case resampling (ratio measured side by side in this
run), and the time of the V1-V8 validation grids.

--against REV also loads `pytest_aqven/stats` as it was at git revision REV (the package imports
nothing outside itself) and times its `decide` on the same attempts, alternating with this one in
the same process, so the ratio is not at the mercy of a noisy machine.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_aqven.stats import Attempt, CheckValue, Guardrail, Pair, SeriesFacts, Threshold, decide  # noqa: E402
from pytest_aqven.stats.estimates import single  # noqa: E402
from pytest_aqven.stats.pairs import m6, pair_estimate  # noqa: E402
from pytest_aqven.stats.samples import build_sample, metric_info  # noqa: E402

CASES, REPEATS, RESAMPLES = 100, 20, 10_000
KINDS = {"promises": "binary"}


def best_of(fn, repeat=7):
    """Smallest wall time of `repeat` runs, in ms (the least noisy figure on a shared machine)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return min(times)


def series(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for c in range(CASES):
        p_b = rng.beta(8, 1)
        slow = rng.normal(0, 0.5)
        for r in range(1, REPEATS + 1):
            for variant, p, factor in (("base", p_b, 1.0), ("cand", min(1, p_b + 0.02), 1.1)):
                ok = bool(rng.random() < p)
                out.append(Attempt(variant, f"case{c:03d}", r, "ok", ok,
                                   {"promises": CheckValue("passed" if ok else "failed", float(ok))},
                                   cost_usd=0.001 * factor * (1 + c % 5),
                                   latency_ms=float(np.round(np.exp(7 + slow + rng.normal(0, 0.5)) * factor))))
    return out


def stats_at(revision: str, into: Path):
    """Import pytest_aqven/stats as of `revision` under the name stats_at_<revision>."""
    root = Path(__file__).resolve().parents[1]
    name = "stats_at_" + "".join(ch if ch.isalnum() else "_" for ch in revision)
    target = into / name
    target.mkdir()
    listing = subprocess.run(["git", "-C", str(root), "ls-tree", "--name-only", f"{revision}:pytest_aqven/stats"],
                             check=True, capture_output=True, text=True).stdout.split()
    for file in listing:
        text = subprocess.run(["git", "-C", str(root), "show", f"{revision}:pytest_aqven/stats/{file}"],
                              check=True, capture_output=True, text=True).stdout
        (target / file).write_text(text)
    sys.path.insert(0, str(into))
    return importlib.import_module(name)


def side_by_side(attempts, revision: str, rounds: int = 15) -> None:
    """decide now vs at `revision`, alternating, best of `rounds` each (threshold and compare)."""
    with tempfile.TemporaryDirectory() as tmp:
        old = stats_at(revision, Path(tmp))
        facts = SeriesFacts("bench", "holdout", ("base", "cand"), KINDS)
        questions = {
            "threshold": (Threshold("promises", above=0.8), old.Threshold("promises", above=0.8)),
            "compare + cost guardrail": (
                Pair("compare", "base", "cand", "promises", 0.0, guardrails=(Guardrail("cost_usd", 0.001),)),
                old.Pair("compare", "base", "cand", "promises", 0.0, guardrails=(old.Guardrail("cost_usd", 0.001),)),
            ),
        }
        print(f"decide, every metric of both variants, C={CASES}, R={REPEATS}, {len(attempts)} attempts "
              f"(ms, best of {rounds}, alternating in this run):")
        for label, (new_q, old_q) in questions.items():
            now, before = [], []
            for _ in range(rounds):
                before.append(best_of(lambda: old.decide(old_q, attempts, facts), 1))
                now.append(best_of(lambda: decide(new_q, attempts, facts), 1))
            same = old.decide(old_q, attempts, facts).text == decide(new_q, attempts, facts).text
            print(f"  {label:26s} at {revision}: {min(before):7.2f}   now: {min(now):7.2f}   "
                  f"ratio now/before = {min(now) / min(before):.3f}   same sentence: {same}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", help="git revision to time decide against, side by side")
    parser.add_argument("--no-grids", action="store_true", help="skip the V1-V8 grid timings")
    args = parser.parse_args()
    attempts = series()
    if args.against:
        side_by_side(attempts, args.against)
    print(f"V10 at C={CASES}, R={REPEATS} (best of 7, ms)")
    samples = {m: (build_sample(attempts, "base", metric_info(m, KINDS), KINDS),
                   build_sample(attempts, "cand", metric_info(m, KINDS), KINDS))
               for m in ("promises", "latency_p95_ms", "cost_of_pass")}
    for family in ("model", "robust"):
        print(f"  family {family}:")
        print(f"    M1 single rate          {best_of(lambda: single(samples['promises'][0], 's', family)):8.2f}")
        print(f"    M2 paired rates         {best_of(lambda: pair_estimate(*samples['promises'], 'higher_is_better', 's', family)):8.2f}")
        print(f"    M5 p95 (Woodruff)       {best_of(lambda: single(samples['latency_p95_ms'][0], 's', family)):8.2f}")
        print(f"    M7 cost_of_pass         {best_of(lambda: single(samples['cost_of_pass'][0], 's', family)):8.2f}")
    facts = SeriesFacts("bench", "holdout", ("base", "cand"), KINDS)
    print(f"  decide(threshold), every metric of both variants: "
          f"{best_of(lambda: decide(Threshold('promises', above=0.8), attempts, facts), 15):8.2f}")

    base, cand = samples["latency_p95_ms"]
    ours = best_of(lambda: m6(base, cand, 0.95, seed=1, resamples=RESAMPLES, log=True), 5)
    lat_b = np.stack(base.values)
    lat_c = np.stack(cand.values)

    def statistic(idx, axis=-1):
        idx = idx.astype(int)
        qc = np.quantile(lat_c[idx].reshape(idx.shape[0], -1), 0.95, axis=1, method="inverted_cdf")
        qb = np.quantile(lat_b[idx].reshape(idx.shape[0], -1), 0.95, axis=1, method="inverted_cdf")
        return np.log(qc / qb)

    def scipy_m6():
        return stats.bootstrap((np.arange(CASES),), statistic, n_resamples=RESAMPLES, vectorized=True,
                               method="percentile", batch=1000, rng=np.random.default_rng(1))

    theirs = best_of(scipy_m6, 3)
    ours_ci = np.quantile(m6(base, cand, 0.95, seed=1, resamples=RESAMPLES, log=True), [0.025, 0.975])
    scipy_ci = scipy_m6().confidence_interval
    print(f"M6 p95 log ratio, B={RESAMPLES}: ours {ours:.1f} ms, scipy.stats.bootstrap {theirs:.1f} ms, "
          f"ratio ours/scipy = {ours / theirs:.3f}")
    print(f"  intervals: ours [{ours_ci[0]:.4f}, {ours_ci[1]:.4f}], scipy [{scipy_ci.low:.4f}, {scipy_ci.high:.4f}]")

    if args.no_grids:
        return
    from tests.stats import validation as V  # noqa: PLC0415

    grids = ("v1_rows", "v2_rows", "robust_mixture_rows", "v4_rows", "concentrated_harm_rows", "v5_rows",
             "v6_rows", "v7_rows", "v8_m5_rows", "v8_m6_rows")
    total = 0.0
    for name in grids:
        start = time.perf_counter()
        getattr(V, name)()
        elapsed = time.perf_counter() - start
        total += elapsed
        print(f"  grid {name:24s} {elapsed:6.1f} s")
    print(f"V1-V8 grids in total: {total:.1f} s")


if __name__ == "__main__":
    main()
