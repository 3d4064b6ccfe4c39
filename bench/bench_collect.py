"""`pytest example_project --collect-only` (a copy, without .aqven/): its whole-process time, beside a
plain `pytest --collect-only` of one trivial test for scale (target: under 2 s, docs/performance.md).

    python bench/bench_collect.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sidebyside import compare, pytest_cmd, report  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(REPO / "example_project", Path(tmp, "example_project"),
                        ignore=shutil.ignore_patterns(".aqven", "__pycache__", "FINDINGS.md", "findings"))
        Path(tmp, "test_one.py").write_text("def test_one():\n    pass\n")
        runs = compare({"example_project --collect-only": pytest_cmd("--collect-only", "example_project"),
                        "-k small_agent_accuracy": pytest_cmd("--collect-only", "example_project",
                                                              "-k", "small_agent_accuracy"),
                        "one trivial test --collect-only": pytest_cmd("--collect-only", "test_one.py")},
                       rounds=args.rounds, cwd=tmp)
    print(f"--collect-only, medians of {args.rounds}:")
    report(runs, against="one trivial test --collect-only")


if __name__ == "__main__":
    main()
