"""Wall time of 400 attempts whose model answers after 50 ms (an async function provider sleeping 50 ms),
with --aqven-concurrency 1, with 32, and with -n 2 --aqven-concurrency 16, measured side by side in one run.

Two figures per configuration: the attempts' own wall time (first attempt start to last attempt end, from
the database) and the whole pytest command (collection, verdict and process start included).

    PYTHONPATH=. python bench/bench_concurrency.py [--attempts 400] [--sleep 0.05] [--rounds 1]
"""
from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests import projects  # noqa: E402  (the test suite's small project)

PROVIDER = '''
import asyncio
from pytest_aqven import ModelResponse


async def complete(request):
    await asyncio.sleep({sleep})
    return ModelResponse(text='{{"label": "positive"}}', tokens_in=10, tokens_out=3, cost_usd=0.0001)
'''

CONFIGS = [("concurrency 1", ["--aqven-concurrency", "1"]),
           ("concurrency 32", ["--aqven-concurrency", "32"]),
           ("-n 2, concurrency 16", ["-n", "2", "--aqven-concurrency", "16"])]


def build(root: Path, attempts: int, sleep: float) -> list[str]:
    repeats = 4
    cases = attempts // repeats
    aqven = projects.FILES["aqven.yaml"].rstrip(" ") + "        research:\n          spend_cap_usd: 1000\n"
    projects.write(root, {"aqven.yaml": aqven, "provider.py": PROVIDER.format(sleep=sleep),
                          **projects.dataset(projects.cases(cases * 3)),
                          **projects.experiment(repeats=repeats, cases=cases)}, package="benchproj")
    return ["--aqven-cases", str(cases), "--aqven-repeats", str(repeats)]


def run(root: Path, args: list[str]) -> tuple[float, float, int]:
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", str(root), "-q", "-p", "no:cacheprovider",
                           "--aqven-new-series", *args], capture_output=True, text=True, cwd=root.parent)
    total = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-3000:]}")
    db = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    (series,) = db.execute("SELECT series_id FROM aqven_series ORDER BY created_at DESC LIMIT 1").fetchone()
    first, last, n = db.execute("SELECT MIN(started_at), MAX(finished_at), COUNT(*) FROM aqven_series_attempts "
                                "WHERE series_id = ?", (series,)).fetchone()
    db.close()
    return last - first, total, n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=400)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        extra = build(root, args.attempts, args.sleep)
        results: dict[str, list[tuple[float, float, int]]] = {name: [] for name, _ in CONFIGS}
        for _ in range(args.rounds):                     # alternating: the machine's noise hits every config
            for name, config in CONFIGS:
                results[name].append(run(root, [*extra, *config]))
    base_attempts = min(r[0] for r in results[CONFIGS[0][0]])
    base_total = min(r[1] for r in results[CONFIGS[0][0]])
    print(f"{args.attempts} attempts, the model answers after {args.sleep * 1000:.0f} ms "
          f"(best of {args.rounds} round{'s' if args.rounds > 1 else ''})")
    print(f"{'configuration':<24}{'attempts wall':>14}{'speed-up':>10}{'pytest wall':>13}{'speed-up':>10}")
    for name, _ in CONFIGS:
        attempts_wall = min(r[0] for r in results[name])
        total = min(r[1] for r in results[name])
        n = results[name][0][2]
        assert n == args.attempts, f"{name}: {n} attempts ran"
        print(f"{name:<24}{attempts_wall:>13.2f}s{base_attempts / attempts_wall:>9.1f}x"
              f"{total:>12.2f}s{base_total / total:>9.1f}x")


if __name__ == "__main__":
    main()
