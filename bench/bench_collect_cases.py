"""`pytest --collect-only` of one experiment over a dataset of 100,000 cases with no `plan.cases` (so every case
is an attempt), beside plain pytest collecting 100,000 parametrized trivial tests: whole-process wall time, CPU
and peak RSS. The experiment's tree has two nodes per attempt (its case's collector and the attempt) where the
plain file has one, and loads and checks the dataset first.

    python bench/bench_collect_cases.py [--cases 100000] [--rounds 1] [--warmup 0]
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import compare, pytest_cmd, report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=0, help="rounds run first and not counted")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = projects.write(Path(tmp, "proj"), cases=args.cases, repeats=1)
        experiment = root / "experiments" / "exp_000" / "experiment.yaml"
        experiment.write_text(re.sub(r"  cases: \d+\n", "", experiment.read_text()))    # every case runs
        projects.plain_tests(Path(tmp, "test_plain.py"), args.cases)
        runs = compare({"experiment --collect-only": pytest_cmd("--collect-only", "proj"),
                        "plain parametrized --collect-only": pytest_cmd("--collect-only", "test_plain.py")},
                       rounds=args.rounds, warmup=args.warmup, cwd=tmp)
    print(f"{args.cases} cases without plan.cases, medians of {args.rounds}:")
    report(runs, against="plain parametrized --collect-only")


if __name__ == "__main__":
    main()
