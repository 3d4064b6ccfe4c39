"""The plugin installed but unused: a suite of trivial parametrized tests, without experiments, collected
with the plugin loaded and with `-p no:aqven`, side by side (target: within 1.05x, docs/performance.md).

    python bench/bench_unused.py [--tests 10000] [--rounds 7] [--run]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sidebyside import compare, pytest_cmd, report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--run", action="store_true", help="run the tests too, not only collect them")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "test_plain.py").write_text(
            f"import pytest\n\n\n@pytest.mark.parametrize('i', range({args.tests}))\n"
            "def test_trivial(i):\n    assert i >= 0\n")
        mode = [] if args.run else ["--collect-only"]
        runs = compare({"plugin installed": pytest_cmd(*mode, "test_plain.py"),
                        "-p no:aqven": pytest_cmd(*mode, "-p", "no:aqven", "test_plain.py")},
                       rounds=args.rounds, cwd=tmp)
    print(f"{args.tests} trivial tests, {'run' if args.run else '--collect-only'}, medians of {args.rounds}:")
    report(runs, against="-p no:aqven")


if __name__ == "__main__":
    main()
