"""Memory against the number of attempts: peak RSS of a session of 100,000 attempts against one of 10,000
(one trivial code node; 1 variant × N cases × 20 repeats), side by side with plain pytest running as many
trivial parametrized tests (target: at most 1.2x, docs/performance.md). pytest itself keeps every item
and every report to the end of a session, so plain pytest grows too: what the plugin adds is the
difference, and that is what has to stay flat. Each run starts from an empty database.

    python bench/bench_memory.py [--small 10000] [--large 100000] [--rounds 1] [--before DIR]

--before DIR also runs the attempts with the pytest_aqven package of DIR, in turn with this one.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from bench_attempts import fresh  # noqa: E402
from sidebyside import compare, median, pytest_cmd, report  # noqa: E402

REPEATS = 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--before", metavar="DIR", help="also run the attempts with the pytest_aqven package in DIR")
    args = ap.parse_args()
    sizes = (args.small, args.large)
    with tempfile.TemporaryDirectory() as tmp:
        commands = {}
        for n in sizes:
            projects.write(Path(tmp, f"p{n}"), cases=n // REPEATS, repeats=REPEATS)
            projects.plain_tests(Path(tmp, f"test_plain_{n}.py"), n)
            commands[f"{n} attempts"] = fresh(f"p{n}")
            commands[f"{n} trivial tests"] = pytest_cmd(f"test_plain_{n}.py")
            if args.before:
                commands[f"{n} attempts before"] = fresh(f"p{n}", code=args.before)
        runs = compare(commands, rounds=args.rounds, warmup=0, cwd=tmp)
    print(f"peak RSS, one code node, {REPEATS} repeats; medians of {args.rounds}:")
    for n in sizes:
        names = [f"{n} attempts", *([f"{n} attempts before"] if args.before else []), f"{n} trivial tests"]
        report({k: runs[k] for k in names}, against=f"{n} trivial tests")
    rss = {k: median(v, "rss_mb") for k, v in runs.items()}
    small, large = args.small, args.large
    extra = {n: rss[f"{n} attempts"] - rss[f"{n} trivial tests"] for n in sizes}
    print(f"attempts: {rss[f'{large} attempts']:.0f} MB against {rss[f'{small} attempts']:.0f} MB, "
          f"x{rss[f'{large} attempts'] / rss[f'{small} attempts']:.2f}")
    print(f"plain pytest: {rss[f'{large} trivial tests']:.0f} MB against {rss[f'{small} trivial tests']:.0f} MB, "
          f"x{rss[f'{large} trivial tests'] / rss[f'{small} trivial tests']:.2f}")
    print(f"what the plugin adds: {extra[large]:.0f} MB at {large} against {extra[small]:.0f} MB at {small} "
          f"(x{extra[large] / extra[small]:.2f}; growth {extra[large] - extra[small]:+.0f} MB for "
          f"{large - small} more attempts)")
    if args.before:
        before = {n: rss[f"{n} attempts before"] - rss[f"{n} trivial tests"] for n in sizes}
        print(f"before: {rss[f'{large} attempts before']:.0f} MB against {rss[f'{small} attempts before']:.0f} MB, "
              f"x{rss[f'{large} attempts before'] / rss[f'{small} attempts before']:.2f}; it added "
              f"{before[large]:.0f} MB at {large} against {before[small]:.0f} MB at {small} "
              f"(growth {before[large] - before[small]:+.0f} MB)")


if __name__ == "__main__":
    main()
