"""`aqven check` on a project whose dataset holds 100,000 cases: whole-process time and peak RSS, beside
`yaml.safe_load` (libyaml) of the same file (targets: at most 10 s and 500 MB, docs/performance.md).

    python bench/bench_check_dataset.py [--cases 100000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import PYTHON, compare, report  # noqa: E402

LOAD = ("import sys, yaml; yaml.load(open(sys.argv[1], encoding='utf-8'), "
        "Loader=getattr(yaml, 'CSafeLoader', yaml.SafeLoader))")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = projects.write(Path(tmp, "proj"), cases=args.cases, repeats=1)
        runs = compare({"aqven check": [PYTHON, "-m", "pytest_aqven.cli", "check", str(root)],
                        "yaml.safe_load (libyaml)": [PYTHON, "-c", LOAD, str(root / "datasets" / "reviews.yaml")]},
                       rounds=args.rounds, cwd=tmp)
    print(f"a dataset of {args.cases} cases; medians of {args.rounds}:")
    report(runs, against="yaml.safe_load (libyaml)")


if __name__ == "__main__":
    main()
