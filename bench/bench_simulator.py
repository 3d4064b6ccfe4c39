"""A local OpenAI-compatible simulator written with Python's http.server, as it comes and as
docs/providers.md#writing-a-local-simulator says to write it, called through the real `openai_compatible`
provider by N callers at once (the connections a run opens at once: concurrency × calls in flight per
attempt × xdist workers), side by side in one run (A B A B ...):

- as it comes: `ThreadingHTTPServer` listens with a backlog of 5 and the handler leaves Nagle's algorithm
  on: connections past the backlog wait for the client's SYN retry (1 s), and an answer written in two
  parts (headers, then body) waits for the client's delayed ACK (about 40 ms) on every call;
- tuned: `request_queue_size` above the connections at once, `disable_nagle_algorithm = True`.

    PYTHONPATH=. python bench/bench_simulator.py [--connections 32] [--calls 20] [--rounds 3]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_aqven.providers.base import Message, ModelRequest  # noqa: E402
from pytest_aqven.providers.openai_compat import OpenAICompatProvider  # noqa: E402

ANSWER = json.dumps({"choices": [{"message": {"role": "assistant", "content": "{\"label\": \"positive\"}"},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 12, "completion_tokens": 5}}).encode()


class Simulator(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"          # keep-alive: one connection serves many calls

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(ANSWER)))
        self.end_headers()
        self.wfile.write(ANSWER)


def start(tuned: bool, connections: int) -> ThreadingHTTPServer:
    server_class = type("Server", (ThreadingHTTPServer,), {
        "daemon_threads": True, "request_queue_size": 4 * connections if tuned else 5})
    handler = type("Handler", (Simulator,), {"disable_nagle_algorithm": tuned})
    server = server_class(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def calls(url: str, connections: int, per_caller: int) -> tuple[float, list[float]]:
    provider = OpenAICompatProvider(provider_id="sim", base_url=url, api_key=None, catalog=None)
    request = ModelRequest(model="m", messages=(Message("user", "hello"),))
    latencies: list[float] = []

    async def caller() -> None:
        for _ in range(per_caller):
            started = time.perf_counter()
            await provider.complete(request)
            latencies.append((time.perf_counter() - started) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(connections)))
    wall = time.perf_counter() - started
    await provider.aclose()
    return wall, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--calls", type=int, default=20, help="calls per caller")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    for _ in range(args.rounds):
        for tuned in (False, True):
            server = start(tuned, args.connections)
            try:
                wall, lat = asyncio.run(calls(f"http://127.0.0.1:{server.server_address[1]}/v1", args.connections,
                                              args.calls))
            finally:
                server.shutdown()
                server.server_close()
            results[tuned].append((wall, statistics.median(lat), max(lat)))
    print(f"{args.connections} callers x {args.calls} calls, medians of {args.rounds} rounds")
    print(f"{'server':<12} {'wall s':>7} {'p50 ms':>7} {'max ms':>7}")
    for tuned, name in ((False, "as it comes"), (True, "tuned")):
        wall, p50, most = (statistics.median(r[i] for r in results[tuned]) for i in range(3))
        print(f"{name:<12} {wall:>7.2f} {p50:>7.1f} {most:>7.0f}")
    slow, fast = (statistics.median(r[0] for r in results[t]) for t in (False, True))
    print(f"wall ratio as it comes / tuned: {slow / fast:.1f}x")


if __name__ == "__main__":
    main()
