"""Session end: deciding every verdict and writing the findings of a held-out series of 3 variants × 200
cases × 20 repeats (12,000 attempts), as a share of the same session's collection time (target: at most
10%, docs/performance.md). Both are timed inside the pytest process by a small plugin; the session runs
from an empty database each round.

    python bench/bench_session_end.py [--cases 200] [--repeats 20] [--variants 3] [--rounds 3]
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
    T["collect_start"] = time.perf_counter()

def pytest_collection_finish(session):
    T["collect_end"] = time.perf_counter()

def pytest_runtest_logfinish(nodeid, location):
    if not nodeid.endswith("::verdict"):
        T["last_attempt"] = time.perf_counter()

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session):
    try:
        return (yield)
    finally:
        T["loop_end"] = time.perf_counter()
        with open(os.environ["BENCH_TIMES"], "w") as f:
            json.dump({"collection": T["collect_end"] - T["collect_start"],
                       "session_end": T["loop_end"] - T["last_attempt"]}, f)
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        projects.write(Path(tmp, "proj"), kind="agents", cases=args.cases, repeats=args.repeats,
                       variants=args.variants, split="holdout")
        # $0.0002 a call: 12,000 attempts would pause near the default $1 cap before the session end
        with Path(tmp, "proj", "aqven.yaml").open("a") as f:
            f.write('research:\n  spend_cap_usd: "1000"\n')
        Path(tmp, "sessiontimer.py").write_text(TIMER)
        times = Path(tmp, "times.json")
        env = {**os.environ, "PYTHONPATH": tmp, "BENCH_TIMES": str(times)}
        for r in range(args.rounds):
            for leftover in ("proj/.aqven", "proj/FINDINGS.md", "proj/experiments/exp_000/findings"):
                shutil.rmtree(Path(tmp, leftover), ignore_errors=True) if not leftover.endswith(".md") \
                    else Path(tmp, leftover).unlink(missing_ok=True)
            subprocess.run(pytest_cmd("-p", "sessiontimer", "--aqven-holdout", "--aqven-fail-on", "invalid", "proj"),
                           cwd=tmp, env=env, stdout=subprocess.DEVNULL, check=False)
            rows.append(json.loads(times.read_text()))
            print(f"  round {r + 1}/{args.rounds}: {rows[-1]}", file=sys.stderr)
    collection = statistics.median(r["collection"] for r in rows)
    end = statistics.median(r["session_end"] for r in rows)
    share = statistics.median(r["session_end"] / r["collection"] for r in rows)
    print(f"{args.variants} variants × {args.cases} cases × {args.repeats} repeats, held out; medians of {args.rounds}:")
    print(f"collection {collection:.2f} s   session end (verdicts, findings) {end:.2f} s   "
          f"session end / collection x{share:.2f}")


if __name__ == "__main__":
    main()
