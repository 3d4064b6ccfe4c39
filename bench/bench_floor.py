"""The floors under the attempt-overhead and concurrency targets: what the least an attempt must do costs.

Three things every attempt does, whatever the code around it: it is a pytest item (one per variant × case ×
repeat, docs/concepts.md), it is a coroutine on an event loop whose synchronous user code runs in a worker
thread under a time limit (docs/engine.md), and its record is kept durably (WAL, group commit). `floor` tests
do exactly that and nothing else: each runs a coroutine that hands a no-op to a worker thread and waits for
it with a time limit, then queues a record of the size of a real one (about 1.1 KB of JSON, one attempt of
bench_attempts.py's project) for a SQLite insert, committed 16 at a time. No engine, no checks, no ledger, no
report hooks. Side by side with trivial tests and with real attempts (bench_attempts.py's project), so the
ratios share one run:

    python bench/bench_floor.py [--n 10000] [--rounds 3] [--no-xdist]

With `-n 2` too unless --no-xdist (each side on two workers).

The target is 1.5x the trivial tests; whatever the floor takes of that leaves the rest for the engine,
the checks, the ledger's claims and the reports.

`--concurrency` measures the floor under the concurrency target instead: 400 attempts of bench_concurrency.py's
flow (a code node, then a chat completion from a local server answering after 50 ms), each doing only the
least: the worker-thread handoff, one keep-alive POST through the design's HTTP client (httpx over the
httpx-aiohttp transport, one client on the attempts' loop), its JSON parsed, the record kept as above. At concurrency 1 each item runs its attempt; above, a loop thread runs every attempt
from the start, at most N at once, and each item waits for its own. The attempts' phase (first start to last
end) and its speed-up over concurrency 1 are the most any implementation of those three can reach here:

    python bench/bench_floor.py --concurrency [--attempts 400] [--rounds 3]
    python bench/bench_floor.py --concurrency --attempts 1000 --delay 0.5 --levels 100    # the 0.5 s target
    python bench/bench_floor.py --concurrency --attempts 1000 --marginal 200 --levels 100  # CPU an attempt

--marginal SMALL also runs each side at SMALL attempts, and prints the CPU of an attempt between the two
sizes (process and children, the difference over the attempts between): the floor's and the attempts' side by
side, without what a session costs once (imports, collection, the series' start, the verdict).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import projects  # noqa: E402
from bench_attempts import fresh  # noqa: E402
from sidebyside import compare, private_temproot, pytest_cmd, report, run_once  # noqa: E402

# The floor's test file: N items, each one attempt doing only those three things (PORT None: a flow of one
# code node; else a code node, then a chat completion from 127.0.0.1:PORT).
FLOOR = '''
import asyncio, concurrent.futures, json, os, queue, sqlite3, threading, time

import pytest

N, CONCURRENCY, PORT = %d, %d, %r
RECORD = json.loads(%r)
BODY = json.dumps({"model": "m1", "messages": [{"role": "user", "content": "Rate the sentiment of the review."},
                                                 {"role": "user", "content": "fine"}]}).encode()
URL, HEADERS = f"http://127.0.0.1:{PORT}/v1/chat/completions", {"Content-Type": "application/json"}
if PORT is not None:
    import httpx
    from httpx_aiohttp import HttpxAiohttpClient
jobs = queue.SimpleQueue()


def work():
    while True:
        future, fn = jobs.get()
        future.set_result(fn())


for _ in range(min(CONCURRENCY, 8)):
    threading.Thread(target=work, daemon=True).start()
os.makedirs(".floor", exist_ok=True)
db = sqlite3.connect(".floor/floor.sqlite", isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE IF NOT EXISTS attempts (id TEXT PRIMARY KEY, record TEXT NOT NULL)")
pending, spans = [], []
client = None   # the design's HTTP client (httpx over the httpx-aiohttp transport), made on the attempts' loop


def user_code():
    return {"text": "fine"}


async def post():
    global client
    if client is None:
        client = HttpxAiohttpClient(headers=HEADERS, limits=httpx.Limits(max_connections=max(CONCURRENCY, 1),
                                                                         max_keepalive_connections=max(CONCURRENCY, 1)))
    return (await client.post(URL, content=BODY)).json()


async def attempt(i):
    started = time.time()
    future = concurrent.futures.Future()
    async with asyncio.timeout(30):
        jobs.put((future, user_code))
        output = future.result(timeout=30) if CONCURRENCY == 1 else await asyncio.wrap_future(future)
        if PORT is not None:
            answer = await post()
            output = json.loads(answer["choices"][0]["message"]["content"])
    finished = time.time()
    spans.append((started, finished))
    return {**RECORD, "case": f"case_{i:06d}", "started_at": started, "finished_at": finished,
            "trace": {**RECORD["trace"], "output": output}}


loop = asyncio.new_event_loop()
if CONCURRENCY > 1:      # every attempt from the start, at most CONCURRENCY at once, on a loop thread
    slots = asyncio.Semaphore(CONCURRENCY)

    async def limited(i):
        async with slots:
            return await attempt(i)

    threading.Thread(target=loop.run_forever, daemon=True).start()
    results = [asyncio.run_coroutine_threadsafe(limited(i), loop) for i in range(N)]


def flush():
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO attempts VALUES (?, ?)", pending)
    db.execute("COMMIT")
    pending.clear()


@pytest.mark.parametrize("i", range(N))
def test_floor(i):
    record = results[i].result() if CONCURRENCY > 1 else loop.run_until_complete(attempt(i))
    pending.append((f"a{i}", json.dumps(record)))
    if len(pending) >= 16:
        flush()


def teardown_module():
    if pending:
        flush()
    if client is not None:
        done = client.aclose()
        loop.run_until_complete(done) if CONCURRENCY == 1 else asyncio.run_coroutine_threadsafe(done, loop).result()
    with open(".floor/phase", "w") as f:
        f.write(str(max(e for _, e in spans) - min(s for s, _ in spans)))
'''

# one real attempt record of bench_attempts.py's project (1,101 bytes of JSON)
RECORD = (
    '{"series_id": "4cf744f8-5ddb-4aa8-a70a-b41f774beb4a", "experiment": "exp_000", "variant": "code", '
    '"case": "case_000002", "repeat": 1, "split": "dev", "outcome": "ok", "passed": true, "checks": {"label": '
    '{"state": "passed", "value": 1.0, "reason": null}}, "cost_usd": 0, "check_cost_usd": 0, "unpriced_calls": 0, '
    '"cost_known": true, "latency_ms": 1.5222199999698205, "tokens_in": 0, "tokens_out": 0, '
    '"schema_valid_first_try": null, "models": {}, "error_code": null, "error_message": null, '
    '"first_failed_node": null, "started_at": 1796113085.4217463, "finished_at": 1796113085.423999, "trace": '
    '{"output": {"label": "positive"}, "error": null, "latency_ms": 1.5222199999698205, "wall_ms": '
    '2.0237720000295667, "nodes": [{"node": "label", "kind": "code", "status": "ok", "output": {"label": '
    '"positive"}, "latency_ms": 1.5222199999698205, "model": null, "calls": [], "error_code": null, '
    '"error_message": null, "parent": null, "branch": null, "iteration": null, "item": null, "input": {"text": '
    '"review case_000002"}, "wall_ms": 1.5222199999698205, "error_location": null, "checks": [], "detail": {}}]}}')


def concurrency(args) -> None:
    from bench_concurrency import CONFIGS, SlowServer, attempts_phase, build

    levels = args.levels
    server = SlowServer(args.delay)
    phases: dict[str, list[float]] = {}
    marginal: dict[str, list[float]] = {}     # CPU at --attempts less CPU at --marginal, per attempt between
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sizes = [args.attempts] + ([args.marginal] if args.marginal else [])
            extra = {n: build(Path(tmp, f"proj{n}"), server.url, n) for n in sizes}
            for n in sizes:
                for c in levels:
                    Path(tmp, f"test_floor_{c}_{n}.py").write_text(FLOOR % (n, c, server.port, RECORD))
            env = private_temproot(tmp)
            for r in range(args.rounds):
                for c in levels:
                    cpu = {}
                    for n in sizes:
                        floor = run_once(["sh", "-c", 'rm -rf .floor && exec "$@"', "sh",
                                          *pytest_cmd(f"test_floor_{c}_{n}.py")], cwd=tmp, env=env)
                        attempts = run_once(pytest_cmd(f"proj{n}", "--aqven-new-series", *extra[n],
                                                       *dict(CONFIGS)[f"concurrency {c}"]), cwd=tmp, env=env)
                        if floor.returncode or attempts.returncode:
                            sys.exit(f"concurrency {c}: pytest exited {floor.returncode} (floor), "
                                     f"{attempts.returncode} (attempts)")
                        cpu[n] = (floor.cpu, attempts.cpu)
                        if n == args.attempts:
                            phases.setdefault(f"floor {c}", []).append(float(Path(tmp, ".floor/phase").read_text()))
                            phases.setdefault(f"attempts {c}", []).append(attempts_phase(Path(tmp, f"proj{n}"))[0])
                    if args.marginal:
                        for i, side in enumerate(("floor", "attempts")):
                            marginal.setdefault(f"{side} {c}", []).append(
                                (cpu[args.attempts][i] - cpu[args.marginal][i]) / (args.attempts - args.marginal))
                print(f"  round {r + 1}/{args.rounds}", file=sys.stderr)
    finally:
        server.stop()
    med = {k: statistics.median(v) for k, v in phases.items()}
    mcpu = {k: statistics.median(v) * 1000 for k, v in marginal.items()}
    base = levels[0]
    print(f"{args.attempts} attempts against a server answering after {args.delay * 1000:.0f} ms; the attempts' phase, "
          f"medians of {args.rounds}" + (f"; CPU ms an attempt between {args.marginal} and {args.attempts} attempts"
                                         if args.marginal else "") + ":")
    print(f"| concurrency | floor phase | floor speed-up over {base} | attempts phase | attempts speed-up over {base} |"
          + (" floor CPU ms | attempts CPU ms | attempts / floor |" if args.marginal else ""))
    print("|---|---|---|---|---|" + ("---|---|---|" if args.marginal else ""))
    for c in levels:
        f, a = med[f"floor {c}"], med[f"attempts {c}"]
        row = f"| {c} | {f:.2f} s | {med[f'floor {base}'] / f:.1f}x | {a:.2f} s | {med[f'attempts {base}'] / a:.1f}x |"
        if args.marginal:
            row += f" {mcpu[f'floor {c}']:.2f} | {mcpu[f'attempts {c}']:.2f} | {mcpu[f'attempts {c}'] / mcpu[f'floor {c}']:.2f}x |"
        print(row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="attempts (500 cases × 20 repeats at 10,000)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-xdist", action="store_true", help="leave out the -n 2 runs")
    ap.add_argument("--concurrency", action="store_true", help="the floor under the concurrency target instead")
    ap.add_argument("--attempts", type=int, default=400, help="with --concurrency")
    ap.add_argument("--delay", type=float, default=0.05, help="with --concurrency: the server's answer time, seconds")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 32, 100], help="with --concurrency")
    ap.add_argument("--marginal", type=int, metavar="SMALL", help="with --concurrency: also each side at SMALL "
                    "attempts, for the CPU an attempt between SMALL and --attempts (without a session's fixed costs)")
    args = ap.parse_args()
    if args.concurrency:
        return concurrency(args)
    groups = [""] if args.no_xdist else ["", " -n 2"]
    with tempfile.TemporaryDirectory() as tmp:
        projects.write(Path(tmp, "proj"), cases=args.n // 20, repeats=20)
        projects.plain_tests(Path(tmp, "test_plain.py"), args.n)
        Path(tmp, "test_floor.py").write_text(FLOOR % (args.n, 1, None, RECORD))
        commands = {}
        for suffix in groups:
            xdist = suffix.split()
            commands[f"{args.n} trivial tests{suffix}"] = pytest_cmd(*xdist, "test_plain.py")
            commands[f"{args.n} floor tests{suffix}"] = ["sh", "-c", 'rm -rf .floor && exec "$@"', "sh",
                                                         *pytest_cmd(*xdist, "test_floor.py")]
            commands[f"{args.n} attempts{suffix}"] = fresh("proj", *xdist)
        runs = compare(commands, rounds=args.rounds, cwd=tmp)
    print(f"medians of {args.rounds}; floor: a pytest item, a coroutine, a worker-thread handoff under a time "
          f"limit, a 1.1 KB record group-committed to SQLite:")
    for suffix in groups:
        report({k: v for k, v in runs.items() if k.endswith(suffix) and (suffix or "-n" not in k)},
               against=f"{args.n} trivial tests{suffix}")


if __name__ == "__main__":
    main()
