"""Instructions an attempt costs, against the floor and trivial tests: a figure the machine's noise does not move.

The time of one configuration moves by up to 40% between runs minutes apart on these shared 2-core machines,
more than the margins left to the attempt-overhead target. Instructions counted by valgrind's callgrind (user
space, every thread of the process) repeat to about 0.1% whatever else the machine does, so a cut of 1% shows.
Each command runs at N and at 2N items; the difference over N is the marginal cost of one item, without the
session's fixed costs (startup, imports, collection's setup, the verdicts):

    python bench/bench_instructions.py [--n 500] [--repeat 2] [--before DIR] [--jobs 2]

The commands are bench_floor.py's: trivial tests, the floor (a pytest item, a coroutine, a worker-thread
handoff under a time limit, a 1.1 KB record group-committed to SQLite) and attempts of bench_attempts.py's
project (one code node, 20 repeats per case) at concurrency 1; with --before, the attempts again with the
pytest_aqven package of DIR on PYTHONPATH. Instructions are not time: kernel time (system calls, thread
wake-ups) is not counted, and an instruction that misses the cache costs more than one that hits, so read the
ratios beside bench_floor.py's CPU ratios, not instead of them. Under valgrind a run takes about 40 times as
long (about five minutes in all at the default N); the runs go two at a time.

Run it on an idle machine: while another test suite ran here, every run's count rose by about 0.9 G at once (the
same amount for every command and size), which would read as 0.9 M an item between a run at N and one at 2N.
Each count is the least of --repeat runs (2), and the spread is printed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from bench_attempts import fresh  # noqa: E402
from bench_floor import FLOOR, RECORD  # noqa: E402
from sidebyside import private_temproot  # noqa: E402

COLLECTED = re.compile(r"Collected : (\d+)")


def counted(cmd: list[str], cwd: Path, env: dict[str, str]) -> int:
    """The instructions callgrind counted for `cmd` (a shell line run by sh in `cwd`)."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    found = COLLECTED.findall(proc.stderr)
    if proc.returncode not in (0, 1) or not found:
        raise SystemExit(f"{shlex.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return int(found[-1])


def command(target: str, code: str | None = None) -> list[str]:
    """pytest on `target` under callgrind (bench_attempts.fresh's command: sh -c '... exec "$@"' sh pytest ...)."""
    shell = fresh(target, code=code)
    return [*shell[:4], "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *shell[4:]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="items of the smaller run (a multiple of 20)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each command and size; the least count is kept")
    ap.add_argument("--before", metavar="DIR", help="also the attempts with the pytest_aqven package in DIR")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (the counts do not depend on it)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    kinds = {"trivial tests": ("test_plain.py", None), "floor": ("test_floor.py", None),
             "attempts": ("proj", None)}
    if args.before:
        kinds["attempts before"] = ("proj", args.before)
    with tempfile.TemporaryDirectory() as tmp:
        jobs = {}
        for r in range(args.repeat):
            for n in (args.n, 2 * args.n):
                for name in kinds:     # each run in a folder of its own: two run at once
                    folder = Path(tmp, f"{name.replace(' ', '_')}_{n}_{r}")
                    projects.write(folder / "proj", cases=n // 20, repeats=20)
                    projects.plain_tests(folder / "test_plain.py", n)
                    (folder / "test_floor.py").write_text(FLOOR % (n, 1, None, RECORD))
                    jobs[name, n, r] = folder
        env = {**private_temproot(tmp), "OPENBLAS_NUM_THREADS": "1"}    # no BLAS threads spinning in the count
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {key: pool.submit(counted, command(*kinds[key[0]]), folder, env)
                       for key, folder in jobs.items()}
            runs: dict[tuple[str, int], list[int]] = {}
            for (name, size, _), f in futures.items():
                runs.setdefault((name, size), []).append(f.result())
    counts = {key: min(values) for key, values in runs.items()}
    spread = max((max(v) - min(v)) / min(v) for v in runs.values())
    n = args.n
    marginal = {name: (counts[name, 2 * n] - counts[name, n]) / n for name in kinds}
    fixed = {name: counts[name, n] - marginal[name] * n for name in kinds}
    print(f"instructions (callgrind, every thread), runs of {n} and {2 * n} items; marginal = the difference / {n}")
    print("| command | marginal, M an item | x trivial | x floor | fixed, G | 10,000 items, G (extrapolated) "
          "| x floor |")
    print("|---|---|---|---|---|---|---|")
    at = {name: (fixed[name] + marginal[name] * 10_000) for name in kinds}
    for name in kinds:
        print(f"| {name} | {marginal[name] / 1e6:.3f} | {marginal[name] / marginal['trivial tests']:.2f} "
              f"| {marginal[name] / marginal['floor']:.2f} | {fixed[name] / 1e9:.2f} | {at[name] / 1e9:.1f} "
              f"| {at[name] / at['floor']:.2f} |")
    print(f"the least of {args.repeat} runs each; the widest spread between runs of one command {spread:.2%}")
    if args.before:
        print(f"attempts against before: marginal x{marginal['attempts'] / marginal['attempts before']:.3f}, "
              f"fixed x{fixed['attempts'] / fixed['attempts before']:.3f}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")     # the same string hashes, so the same dict probes: repeatable
    main()
