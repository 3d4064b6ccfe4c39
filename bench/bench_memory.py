"""Memory against the number of attempts: peak RSS of a session of 100,000 attempts against one of 10,000
(one trivial code node; 1 variant × N cases × 20 repeats), side by side (target: at most 1.2x,
docs/performance.md). Each run starts from an empty database.

    python bench/bench_memory.py [--small 10000] [--large 100000] [--rounds 1]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from bench_attempts import fresh  # noqa: E402
from sidebyside import compare, report  # noqa: E402

REPEATS = 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.small, args.large):
            projects.write(Path(tmp, f"p{n}"), cases=n // REPEATS, repeats=REPEATS)
        runs = compare({f"{args.large} attempts": fresh(f"p{args.large}"),
                        f"{args.small} attempts": fresh(f"p{args.small}")}, rounds=args.rounds, warmup=0, cwd=tmp)
    print(f"peak RSS, one code node, {REPEATS} repeats; medians of {args.rounds}:")
    report(runs, against=f"{args.small} attempts")
    large, small = (sorted(r.rss_mb for r in runs[k])[len(runs[k]) // 2] for k in runs)
    print(f"peak RSS ratio x{large / small:.2f}")


if __name__ == "__main__":
    main()
