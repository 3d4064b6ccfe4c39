"""CPU per call of synchronous user code from the attempts' loop, as a code node makes it at many attempts in
flight: `usercode.call` of a trivial function from N tasks of one event loop, each task also waiting outside
the loop between its calls (as an attempt waits for its chat completion), so no call runs alone on its loop.
Side by side in one run with `--before DIR` (another checkout's folder holding pytest_aqven), each side in a
process of its own, its CPU counted by `time.process_time` around the calls alone, after a warm-up that
grows the pool of worker threads.

    python bench/bench_usercode_call.py [--calls 20000] [--inflight 100] [--rounds 5] [--before DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CLIENT = '''
import asyncio, json, sys, time
from pytest_aqven.project import usercode
N, CALLS = int(sys.argv[1]), int(sys.argv[2])


def work(x):
    return x + 1


async def main():
    async def one(i):
        for _ in range(CALLS // N):
            await usercode.call(work, i)
            await usercode.waiting(asyncio.sleep(0.001))
    await asyncio.gather(*(one(i) for i in range(N)))          # warm-up: the pool grows
    cpu = time.process_time()
    await asyncio.gather(*(one(i) for i in range(N)))
    print(json.dumps({"cpu": time.process_time() - cpu}))

asyncio.run(main())
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--inflight", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--before", help="another checkout's folder holding pytest_aqven, measured side by side")
    args = ap.parse_args()
    sides = [("this", str(REPO))] + ([("before", args.before)] if args.before else [])
    runs: dict[str, list[float]] = {name: [] for name, _ in sides}
    for r in range(args.rounds):
        for name, path in sides:
            out = subprocess.run([sys.executable, "-c", CLIENT, str(args.inflight), str(args.calls)],
                                 env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                                 cwd=tempfile.gettempdir())       # not this folder: PYTHONPATH picks the code
            if out.returncode:
                sys.exit(f"{name}: exited {out.returncode}\n{out.stderr[-2000:]}")
            runs[name].append(json.loads(out.stdout)["cpu"] / args.calls * 1e6)
        print(f"  round {r + 1}/{args.rounds}", file=sys.stderr)
    print(f"{args.calls} calls of user code, {args.inflight} tasks in flight, each waiting 1 ms outside the loop "
          f"between calls; medians of {args.rounds} rounds (range)")
    print("| code | CPU µs per call (its wait included) |")
    print("|---|---|")
    for name, per in runs.items():
        per.sort()
        print(f"| {name} | {statistics.median(per):.1f} ({per[0]:.1f}-{per[-1]:.1f}) |")


if __name__ == "__main__":
    main()
