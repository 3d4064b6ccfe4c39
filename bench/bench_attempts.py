"""Attempt overhead: a series of one trivial code node (1 variant × 500 cases × 20 repeats = 10,000
attempts) against 10,000 trivial parametrized tests, with and without `-n 2`, side by side (target: at
most 1.5x in both, docs/performance.md). Each run starts from an empty database.

    python bench/bench_attempts.py [--cases 500] [--repeats 20] [--rounds 3] [--no-xdist]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import compare, pytest_cmd, report  # noqa: E402


def fresh(project: str, *args: str) -> list[str]:
    """pytest on `project` after removing its database, so every run runs every attempt."""
    return ["sh", "-c", f'rm -rf {project}/.aqven && exec "$@"', "sh", *pytest_cmd(*args, project)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-xdist", action="store_true", help="leave out the -n 2 pair")
    args = ap.parse_args()
    n = args.cases * args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        projects.write(Path(tmp, "proj"), cases=args.cases, repeats=args.repeats)
        projects.plain_tests(Path(tmp, "test_plain.py"), n)
        commands = {f"{n} attempts": fresh("proj"), f"{n} trivial tests": pytest_cmd("test_plain.py")}
        if not args.no_xdist:
            commands.update({f"{n} attempts -n 2": fresh("proj", "-n", "2"),
                             f"{n} trivial tests -n 2": pytest_cmd("-n", "2", "test_plain.py")})
        runs = compare(commands, rounds=args.rounds, cwd=tmp)
    print(f"1 variant × {args.cases} cases × {args.repeats} repeats, one code node; medians of {args.rounds}:")
    names = list(runs)
    report({k: runs[k] for k in names[:2]}, against=names[1])
    if not args.no_xdist:
        report({k: runs[k] for k in names[2:]}, against=names[3])


if __name__ == "__main__":
    main()
