"""400 attempts against a local chat-completions server on 127.0.0.1 that answers after 50 ms, through the
real `openai_compatible` provider (httpx), with --aqven-concurrency 1, 32, 100 and -n 2 --aqven-concurrency 16,
measured side by side in one run (A B C D A B C D ...).

Per configuration (medians over rounds):
- attempts wall: the attempts' own phase, first attempt start to last attempt end (from the database). This
  is the figure concurrency speeds up, and the one the target is about; against the ideal: that phase over
  the time the server's answers alone take (waves of as many calls as are in flight, each `delay` long);
- pytest wall and CPU: the whole command (process start, imports, collection, verdict, xdist workers);
- CPU ms per attempt: the command's CPU minus that of `--collect-only` on the same project, per attempt;
- turnaround: on one keep-alive connection, from the server's answer to the next request (median and 90th
  percentile, ms): what the client does between two calls of a slot (the answer's attempt finished, the next
  claimed, its code node run, its prompt sent). At 100 in flight a wave of answers queues on the one GIL, so
  this is where the CPU per attempt shows as wall time beyond the server's delay.

    PYTHONPATH=. python bench/bench_concurrency.py [--attempts 400] [--delay 0.05] [--rounds 3] [--before DIR]
    PYTHONPATH=. python bench/bench_concurrency.py --attempts 1000 --delay 0.5 --only "concurrency 100"   # ideal 5 s
    PYTHONPATH=. python bench/bench_concurrency.py --only "concurrency 100" --marginal 200 --threads   # CPU per attempt

--before DIR adds each configuration run with another checkout's pytest_aqven (DIR first on PYTHONPATH, e.g.
a `git worktree add DIR <commit>`), in the same rounds, so before and after are measured side by side;
--this DIR2 runs this code from a copy on PYTHONPATH too (`git archive HEAD pytest_aqven | tar -x -C DIR2`),
so both sides pay the same for it (about 6% of CPU).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.sidebyside import private_temproot, pytest_cmd, run_once  # noqa: E402
from tests import projects  # noqa: E402  (the test suite's small project)

CONFIGS = [("concurrency 1", ["--aqven-concurrency", "1"]),     # (name, options); calls in flight: in_flight()
           ("concurrency 32", ["--aqven-concurrency", "32"]),
           ("concurrency 100", ["--aqven-concurrency", "100"]),
           ("-n 2, concurrency 16", ["-n", "2", "--aqven-concurrency", "16"])]

AQVEN = '''
        apiVersion: "aqven/v1"
        kind: "Project"
        description: "A project on a local chat-completions server"
        package: "{package}"
        research:
          spend_cap_usd: 1000
        providers:
        - id: "local"
          kind: "openai_compatible"
          base_url: "{url}"
          params: {timeout_s: 30}
          data_policy:
            allows_pii: false
            allows_sensitive: false
            retention: "zero"
        '''
AGENT = 'apiVersion: "aqven/v1"\nkind: "Agent"\ndescription: "A model"\nmodel: "local:m1"\n'


class SlowServer:
    """Chat completions on 127.0.0.1, each answered after `delay` seconds (asyncio: a thousand connections
    cost nothing), HTTP/1.1 keep-alive, priced (usage.cost). Counts requests and the most answered at once."""

    def __init__(self, delay: float):
        self.delay = delay
        self.requests = 0
        self.inflight = 0
        self.max_inflight = 0
        self.turnarounds: list[float] = []     # seconds from an answer to the next request on its connection
        self.loop = asyncio.new_event_loop()
        self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024))
        self.port = self.server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = None
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                if answered is not None:
                    self.turnarounds.append(time.perf_counter() - answered)
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = header.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = json.loads(await reader.readexactly(length)) if length else {}
                self.requests += 1
                self.inflight += 1
                self.max_inflight = max(self.max_inflight, self.inflight)
                await asyncio.sleep(self.delay)
                self.inflight -= 1
                answer = json.dumps({
                    "id": "c", "object": "chat.completion", "model": body.get("model", ""),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": '{"label": "positive"}'}}],
                    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "cost": 0.0001}}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(answer)).encode() + b"\r\n\r\n" + answer)
                answered = time.perf_counter()
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def stop(self) -> None:
        async def shut() -> None:
            self.server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()
        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


# --threads: the CPU each thread of the pytest process spent in its run loop (the attempts' phase and the items'
# reports), from /proc, by thread name; written where BENCH_THREADS says. xdist workers are other processes.
THREADS = '''
import json, os, threading
import pytest


def _cpu():
    tick, names, out = os.sysconf("SC_CLK_TCK"), {t.native_id: t.name for t in threading.enumerate()}, {}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(int(tid), "other").split("_")[0]      # aqven-db_0: aqven-db
        out[name] = out.get(name, 0) + (int(fields[11]) + int(fields[12])) / tick
    return out


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session):
    before = _cpu()
    try:
        return (yield)
    finally:
        after = _cpu()
        with open(os.environ["BENCH_THREADS"], "w") as f:
            json.dump({k: v - before.get(k, 0) for k, v in after.items()}, f)
'''


def in_flight(config: list[str]) -> int:
    """The most calls a configuration has in flight: its concurrency, times its xdist workers."""
    options = dict(zip(config[::2], config[1::2]))
    return int(options["--aqven-concurrency"]) * int(options.get("-n", 1))


def ideal(attempts: int, delay: float, config: list[str]) -> float:
    """The attempts' phase if nothing but the server's answers took time: waves of `in_flight` calls."""
    return math.ceil(attempts / in_flight(config)) * delay


def build(root: Path, url: str, attempts: int) -> list[str]:
    repeats = 4
    cases = attempts // repeats
    projects.write(root, {"aqven.yaml": AQVEN.replace("{url}", url), "agents/bot.yaml": AGENT,
                          **projects.dataset(projects.cases(cases * 3)),
                          **projects.experiment(repeats=repeats, cases=cases)}, package="benchproj")
    (root / "provider.py").unlink()
    return ["--aqven-cases", str(cases), "--aqven-repeats", str(repeats)]


def attempts_phase(root: Path) -> tuple[float, int]:
    """First attempt start to last attempt end of the newest series, and how many attempts it has."""
    db = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    try:
        (series,) = db.execute("SELECT series_id FROM aqven_series ORDER BY created_at DESC LIMIT 1").fetchone()
        first, last, n = db.execute("SELECT MIN(started_at), MAX(finished_at), COUNT(*) FROM aqven_series_attempts "
                                    "WHERE series_id = ?", (series,)).fetchone()
    finally:
        db.close()
    return last - first, n


def _quantiles(seconds: list[float]) -> str:
    if len(seconds) < 2:
        return "-"
    deciles = statistics.quantiles(seconds, n=10)
    return f"{statistics.median(seconds) * 1000:.1f} / {deciles[-1] * 1000:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="configuration names to run (default: all)")
    parser.add_argument("--before", help="another checkout of the repository, measured side by side")
    parser.add_argument("--this", metavar="DIR", help="run this code from DIR too (`git archive HEAD pytest_aqven`), "
                        "so both sides pay the same for a package on PYTHONPATH")
    parser.add_argument("--marginal", type=int, metavar="SMALL", help="also run each configuration with SMALL "
                        "attempts (fewer cases of the same project), in the same rounds: the CPU per attempt "
                        "without what a session costs once (imports, the series start, the verdict)")
    parser.add_argument("--threads", action="store_true", help="also the CPU of each thread of the pytest process in "
                        "its run loop (MainThread: pytest's items; aqven-attempts: the attempts' event loop; "
                        "aqven-db: the database; aqven-commit: the group commit's clock; aqven-user-code: the user's code; "
                        "aqven-imports: the verdicts' imports)")
    args = parser.parse_args()
    versions = [("", args.this)] + ([(" (before)", args.before)] if args.before else [])
    configs = [(name + label, label, config, path) for name, config in CONFIGS if not args.only or name in args.only
               for label, path in versions]
    server = SlowServer(args.delay)
    rows: dict[str, list[tuple[float, float, float]]] = {name: [] for name, *_ in configs}
    turnaround: dict[str, list[float]] = {name: [] for name, *_ in configs}
    collect_cpu: list[float] = []
    marginal: dict[str, list[float]] = {name: [] for name, *_ in configs}     # CPU of N less that of SMALL attempts
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # one project per checkout: each keeps its own database (an older checkout refuses a newer schema)
            roots = {label: Path(tmp) / f"proj{i}" for i, (label, _) in enumerate(versions)}
            extra = [build(root, server.url, args.attempts) for root in roots.values()][0]
            env = private_temproot(tmp)
            threads: dict[str, list[dict]] = {name: [] for name, *_ in configs}
            if args.threads:
                Path(tmp, "benchthreads.py").write_text(THREADS)
                env = {**env, "BENCH_THREADS": str(Path(tmp, "threads.json"))}
            for r in range(args.rounds):                 # alternating: the machine's noise hits every config
                collect_cpu.append(run_once(pytest_cmd(str(roots[""]), "--collect-only", *extra), cwd=tmp, env=env).cpu)
                for name, label, config, path in configs:
                    root = roots[label]
                    plugin = ["-p", "benchthreads"] if args.threads else []
                    paths = os.pathsep.join(filter(None, [path, tmp if args.threads else None]))
                    server.turnarounds = []
                    run = run_once(pytest_cmd(str(root), "--aqven-new-series", *plugin, *extra, *config), cwd=tmp,
                                   env={**env, "PYTHONPATH": paths} if paths else env)
                    if run.returncode != 0:
                        sys.exit(f"{name}: pytest exited {run.returncode}")
                    phase, n = attempts_phase(root)
                    if n != args.attempts:
                        sys.exit(f"{name}: {n} attempts ran, not {args.attempts}")
                    rows[name].append((phase, run.wall, run.cpu))
                    turnaround[name].extend(server.turnarounds)
                    if args.marginal:
                        small = [*extra[:1], str(args.marginal // 4), *extra[2:]]    # --aqven-cases, 4 repeats
                        cmd = pytest_cmd(str(root), "--aqven-new-series", *small, *config)
                        marginal[name].append(run.cpu - run_once(cmd, cwd=tmp, env={**env, "PYTHONPATH": path}
                                                                 if path else env).cpu)
                    if args.threads:
                        threads[name].append(json.loads(Path(tmp, "threads.json").read_text()))
                print(f"  round {r + 1}/{args.rounds}", file=sys.stderr)
    finally:
        server.stop()
    med = {name: [statistics.median(col) for col in zip(*rs)] for name, rs in rows.items()}
    cpu0 = statistics.median(collect_cpu)
    print(f"{args.attempts} attempts, the server answers after {args.delay * 1000:.0f} ms; medians of {args.rounds} "
          f"round{'s' if args.rounds > 1 else ''}; the server saw at most {server.max_inflight} requests at once; "
          f"--collect-only CPU {cpu0:.2f} s")
    print("| configuration | attempts wall | against the ideal | speed-up | pytest wall | speed-up | pytest CPU "
          "| CPU ms per attempt | turnaround ms, median / p90 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, label, config, _ in configs:
        phase, wall, cpu = med[name]
        base_phase, base_wall, _ = med.get(CONFIGS[0][0] + label, med[configs[0][0]])   # its own concurrency 1
        print(f"| {name} | {phase:.2f} s | {phase / ideal(args.attempts, args.delay, config):.2f}x "
              f"| {base_phase / phase:.1f}x | {wall:.2f} s | {base_wall / wall:.1f}x "
              f"| {cpu:.2f} s | {(cpu - cpu0) / args.attempts * 1000:.1f} | {_quantiles(turnaround[name])} |")
    if args.marginal:
        print(f"\nCPU ms per attempt, marginal: the command's CPU at {args.attempts} attempts less its CPU at "
              f"{args.marginal}, per attempt between (medians of the pairs):")
        print("| configuration | CPU ms per attempt |\n|---|---|")
        for name, *_ in configs:
            print(f"| {name} | {statistics.median(marginal[name]) / (args.attempts - args.marginal) * 1000:.2f} |")
    if args.threads:
        names = ["MainThread", "aqven-attempts", "aqven-db", "aqven-commit", "aqven-user-code", "aqven-imports"]
        print("\nCPU ms per attempt of each thread of the pytest process in its run loop (medians; under -n 2 the "
              "controller's, its workers' are not counted):")
        print("| configuration | " + " | ".join(names) + " | other | all |")
        print("|---|" + "---|" * (len(names) + 2))
        for name, *_ in configs:
            per = {n: statistics.median(t.get(n, 0.0) for t in threads[name]) / args.attempts * 1000 for n in names}
            total = statistics.median(sum(t.values()) for t in threads[name]) / args.attempts * 1000
            other = statistics.median(sum(v for k, v in t.items() if k not in names) for t in threads[name])
            print(f"| {name} | " + " | ".join(f"{per[n]:.2f}" for n in names)
                  + f" | {other / args.attempts * 1000:.2f} | {total:.2f} |")


if __name__ == "__main__":
    main()
