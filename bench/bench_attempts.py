"""Attempt overhead: a series of one trivial code node (1 variant × 500 cases × 20 repeats = 10,000
attempts) against 10,000 trivial parametrized tests, with and without `-n 2`, side by side (target: at
most 1.5x in both, docs/performance.md). Each run starts from an empty database.

    python bench/bench_attempts.py [--cases 500] [--repeats 20] [--rounds 3] [--no-xdist] [--before DIR]

--before DIR also runs the attempts with the pytest_aqven package of DIR first on the path (an earlier
commit: `git archive <commit> pytest_aqven | tar -x -C DIR`), so a change is measured side by side too.
"""
from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from sidebyside import compare, pytest_cmd, report  # noqa: E402


def fresh(project: str, *args: str, code: str | None = None) -> list[str]:
    """pytest on `project` after removing its database, so every run runs every attempt; with `code`, the
    pytest_aqven package of that folder instead of the installed one."""
    path = f"PYTHONPATH={shlex.quote(str(Path(code).resolve()))} " if code else ""
    return ["sh", "-c", f'rm -rf {project}/.aqven && {path}exec "$@"', "sh", *pytest_cmd(*args, project)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-xdist", action="store_true", help="leave out the -n 2 pair")
    ap.add_argument("--before", metavar="DIR", help="also run the attempts with the pytest_aqven package in DIR")
    args = ap.parse_args()
    n = args.cases * args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        projects.write(Path(tmp, "proj"), cases=args.cases, repeats=args.repeats)
        projects.plain_tests(Path(tmp, "test_plain.py"), n)
        groups = [("", ())] if args.no_xdist else [("", ()), (" -n 2", ("-n", "2"))]
        commands: dict[str, list[str]] = {}
        for suffix, xdist in groups:
            if args.before:
                commands[f"{n} attempts before{suffix}"] = fresh("proj", *xdist, code=args.before)
            commands[f"{n} attempts{suffix}"] = fresh("proj", *xdist)
            commands[f"{n} trivial tests{suffix}"] = pytest_cmd(*xdist, "test_plain.py")
        runs = compare(commands, rounds=args.rounds, cwd=tmp)
    print(f"1 variant × {args.cases} cases × {args.repeats} repeats, one code node; medians of {args.rounds}:")
    for suffix, _ in groups:
        names = [k for k in runs if k.endswith(suffix) and (suffix or " -n 2" not in k)]
        report({k: runs[k] for k in names}, against=f"{n} trivial tests{suffix}")
        if args.before:
            report({k: runs[k] for k in names if "trivial" not in k}, against=f"{n} attempts before{suffix}")


if __name__ == "__main__":
    main()
