"""The flow engine's overhead, measured side by side (alternating rounds) in one run:

1. a 20-node code-only flow run by the engine, against calling the same 20 Python functions directly:
   the ratio, and the engine's overhead per node, for functions that do `--work` microseconds of work
   each (a code node that does nothing measures the overhead alone);
2. a parallel node of 10 branches, each a tool that takes 50 ms: the whole node's wall time (about 50 ms
   when the branches run concurrently, 500 ms one after another).

    PYTHONPATH=. python bench/bench_engine.py [--rounds 15] [--work 0,200,1000]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_aqven.engine.runner import Assembly, Runner  # noqa: E402
from pytest_aqven.providers import registry  # noqa: E402
from tests.engine_projects import flow, load, node, write  # noqa: E402

NODES = 20
STEP = '''
import time


def step(x: int, work: float) -> dict:
    if work:
        end = time.perf_counter() + work
        while time.perf_counter() < end:
            pass
    return {"x": x + 1}


def slow_tool(order_id: str) -> dict:
    time.sleep(0.05)
    return {"status": order_id}
'''


def project(root: Path, work_us: float):
    ids = [f"n{i:02d}" for i in range(NODES)]
    files = {"steps.py": STEP, "types/ask.yaml": {"apiVersion": "aqven/v1", "kind": "Type", "type": "record",
                                                  "description": "x", "fields": [{"name": "x", "type": "Int"}]},
             "types/answer.yaml": {"apiVersion": "aqven/v1", "kind": "Type", "type": "record", "description": "x",
                                   "fields": [{"name": "x", "type": "Int"}]},
             "flows/chain/flow.yaml": flow(ids, {"x": f"$n{NODES - 1:02d}.out.x"})}
    for i, node_id in enumerate(ids):
        source = "$input.x" if i == 0 else f"$n{i - 1:02d}.out.x"
        files[f"flows/chain/nodes/{node_id}/{node_id}.node.yaml"] = node(
            "code", run="@root.steps:step", in_=[{"name": "x", "from": source}, {"name": "work", "value": work_us / 1e6}],
            out=[{"name": "x", "type": "Int"}])
    files["tools/slow.yaml"] = {"apiVersion": "aqven/v1", "kind": "Tool", "description": "50 ms", "effect": "read",
                                "run": "@root.steps:slow_tool", "in": [{"name": "order_id", "type": "Text"}],
                                "out": [{"name": "status", "type": "Text"}]}
    files["flows/fan/flow.yaml"] = flow(["fan"], {"x": "$fan.out.count"})
    files["flows/fan/nodes/fan/fan.node.yaml"] = node(
        "parallel", body={f"b{i}": f"b{i}" for i in range(10)},
        out=[{"name": "statuses", "type": "Text[]", "from": "$ok[*].status"}, {"name": "count", "type": "Int",
                                                                              "from": "$input.x"}])
    for i in range(10):
        files[f"flows/fan/nodes/fan/b{i}.node.yaml"] = node("tool", tool="slow", in_=[{"name": "order_id", "value": f"o{i}"}])
    package = f"benchengine{int(work_us)}"
    return load(write(root / package, files, package))


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--work", default="0,200,1000", help="microseconds of work per function, comma separated")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    print(f"1. {NODES}-node code-only flow, engine vs the {NODES} functions called directly "
          f"(median of {args.rounds} alternating rounds)")
    print("   work/node   direct      engine      ratio   overhead/node")
    for work in [float(w) for w in args.work.split(",")]:
        p = project(tmp, work)
        providers = {s.id: registry.build(s, package=p.package, root=p.root) for s in p.spec.providers}
        step = sys.modules[f"{p.package}.steps"].step if f"{p.package}.steps" in sys.modules else None
        plan = Assembly(p.flows["chain"])

        async def engine_run():
            result = await Runner(p, providers).run(plan, {"x": 0})
            assert result.error is None and result.output == {"x": NODES}, result.error

        loop = asyncio.new_event_loop()
        loop.run_until_complete(engine_run())          # warm: imports, models, parsed references
        step = sys.modules[f"{p.package}.steps"].step

        def direct():
            x = 0
            for _ in range(NODES):
                x = step(x, work / 1e6)["x"]

        engine_times, direct_times = [], []
        for _ in range(args.rounds):
            engine_times += timed(lambda: loop.run_until_complete(engine_run()), 1)
            direct_times += timed(direct, 1)
        e, d = statistics.median(engine_times), statistics.median(direct_times)
        print(f"   {work:7.0f} us  {d * 1e3:8.2f} ms  {e * 1e3:8.2f} ms  {e / d:7.2f}x  {(e - d) / NODES * 1e6:8.0f} us")

    print("2. parallel node of 10 branches, each a 50 ms tool call")
    p = project(tmp, 0)
    providers = {}

    async def fan():
        result = await Runner(p, providers).run(Assembly(p.flows["fan"]), {"x": 10})
        assert result.error is None, result.error
        return result.nodes[0].wall_ms

    walls = [loop.run_until_complete(fan()) for _ in range(5)]
    print(f"   wall of the parallel node: median {statistics.median(walls):.1f} ms over 5 runs "
          f"(one call 50 ms, ten in a row 500 ms)")


if __name__ == "__main__":
    main()
