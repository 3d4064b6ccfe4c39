"""Session end: deciding every verdict and writing the findings of a held-out series of 3 variants × 200
cases × 20 repeats (12,000 attempts), as a share of the same session's collection time (target: at most
10%, docs/performance.md). Both are timed inside the pytest process by a small plugin, in wall time and
in the process's CPU time; the session runs from an empty database each round.

    python bench/bench_session_end.py [--cases 200] [--repeats 20] [--variants 3] [--rounds 3] [--before DIR]

--before DIR also runs the session with the pytest_aqven package of DIR (e.g. `git archive 0645b57
pytest_aqven` extracted there), in turn with this one in every round, and prints the ratios pair by pair.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import pytest_cmd  # noqa: E402

TIMER = '''
import json, os, time
import pytest

T = {}

def pytest_collection(session):
    T["collect_start"], T["collect_start_cpu"] = time.perf_counter(), time.process_time()

def pytest_collection_finish(session):
    T["collect_end"], T["collect_end_cpu"] = time.perf_counter(), time.process_time()

def pytest_runtest_logfinish(nodeid, location):
    if not nodeid.endswith("::verdict"):
        T["last_attempt"], T["last_attempt_cpu"] = time.perf_counter(), time.process_time()

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session):
    try:
        return (yield)
    finally:
        T["loop_end"], T["loop_end_cpu"] = time.perf_counter(), time.process_time()
        with open(os.environ["BENCH_TIMES"], "w") as f:
            json.dump({"collection": T["collect_end"] - T["collect_start"],
                       "session_end": T["loop_end"] - T["last_attempt"],
                       "collection_cpu": T["collect_end_cpu"] - T["collect_start_cpu"],
                       "session_end_cpu": T["loop_end_cpu"] - T["last_attempt_cpu"]}, f)
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", metavar="DIR", help="also run the session with the pytest_aqven package in DIR")
    args = ap.parse_args()
    codes = {"now": None, **({"before": str(Path(args.before).resolve())} if args.before else {})}
    rows: dict[str, list[dict]] = {name: [] for name in codes}
    with tempfile.TemporaryDirectory() as tmp:
        projects.write(Path(tmp, "proj"), kind="agents", cases=args.cases, repeats=args.repeats,
                       variants=args.variants, split="holdout")
        # $0.0002 a call: 12,000 attempts would pause near the default $1 cap before the session end
        with Path(tmp, "proj", "aqven.yaml").open("a") as f:
            f.write('research:\n  spend_cap_usd: "1000"\n')
        Path(tmp, "sessiontimer.py").write_text(TIMER)
        times = Path(tmp, "times.json")
        for r in range(args.rounds):
            for name, code in codes.items():
                for leftover in ("proj/.aqven", "proj/FINDINGS.md", "proj/experiments/exp_000/findings"):
                    shutil.rmtree(Path(tmp, leftover), ignore_errors=True) if not leftover.endswith(".md") \
                        else Path(tmp, leftover).unlink(missing_ok=True)
                env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (code, tmp))), "BENCH_TIMES": str(times)}
                subprocess.run(pytest_cmd("-p", "sessiontimer", "--aqven-holdout", "--aqven-fail-on", "invalid", "proj"),
                               cwd=tmp, env=env, stdout=subprocess.DEVNULL, check=False)
                rows[name].append(json.loads(times.read_text()))
                print(f"  round {r + 1}/{args.rounds} {name}: {rows[name][-1]}", file=sys.stderr)
    print(f"{args.variants} variants × {args.cases} cases × {args.repeats} repeats, held out; medians of {args.rounds}:")
    for name, rs in rows.items():
        share = statistics.median(r["session_end"] / r["collection"] for r in rs)
        cpu_share = statistics.median(r["session_end_cpu"] / r["collection_cpu"] for r in rs)
        print(f"{name:>6}: collection {statistics.median(r['collection'] for r in rs):.2f} s   session end (verdicts, "
              f"findings) {statistics.median(r['session_end'] for r in rs):.2f} s   session end / collection x{share:.2f}")
        print(f"        CPU time of the process (all its threads): collection "
              f"{statistics.median(r['collection_cpu'] for r in rs):.2f} s   session end "
              f"{statistics.median(r['session_end_cpu'] for r in rs):.2f} s   x{cpu_share:.2f}")
    if args.before:
        for field in ("session_end", "session_end_cpu"):
            pairs = sorted(a[field] / b[field] for a, b in zip(rows["now"], rows["before"]))
            print(f"session end now / before ({'CPU' if field.endswith('cpu') else 'wall'}), pair by pair: "
                  f"x{statistics.median(pairs):.2f} ({pairs[0]:.2f}-{pairs[-1]:.2f})")


if __name__ == "__main__":
    main()
