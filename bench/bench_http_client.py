"""CPU per chat-completion call of HTTP clients, side by side in one run: N POSTs with C in flight to a local
server on 127.0.0.1 that answers after 50 ms (bench_concurrency.py's server, in this process; each client
runs in a process of its own, its CPU counted by `time.process_time` around the calls alone, after one
warm-up wave that opens the connections).

Clients, in turn in every round:
- provider: `OpenAICompatProvider.complete` of this checkout (httpx over the httpx-aiohttp transport: the
  request's JSON, the call, the answer's parsing);
- provider (before): the same with `--before DIR`'s pytest_aqven (e.g. main before a change, whose client
  was providers/http11.py);
- http11 (before): when DIR has it, the client of providers/http11.py alone (`Origin.post`);
- httpx-aiohttp: `HttpxAiohttpClient.post` alone; aiohttp: `ClientSession.post` alone;
- httpx: `httpx.AsyncClient.post` with httpx's own pool, unlimited (`--httpx` adds it: it takes 10 s a round).

    PYTHONPATH=. python bench/bench_http_client.py [--calls 800] [--inflight 100] [--rounds 3] [--before DIR] [--httpx]
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
sys.path.insert(0, str(REPO))

from bench.bench_concurrency import SlowServer  # noqa: E402

CLIENT = '''
import asyncio, json, sys, time
N, C, URL, KIND = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
BODY = json.dumps({"model": "m1", "messages": [{"role": "user", "content": "fine"}]}).encode()
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench-000000"}


async def main():
    close = None
    if KIND == "provider":
        from pytest_aqven.providers.base import Message, ModelRequest
        from pytest_aqven.providers.openai_compat import OpenAICompatProvider
        provider = OpenAICompatProvider(provider_id="local", base_url=URL, api_key="sk-bench-000000", catalog=None,
                                        timeout_s=30)
        request = ModelRequest("m1", (Message("user", "fine"),))
        call = lambda: provider.complete(request)
    elif KIND == "http11":
        from pytest_aqven.providers.http11 import Origin
        origin = Origin(URL + "/chat/completions", HEADERS, size=C)
        async def call():
            return (await origin.post(None, BODY, timeout=30, connect_timeout=10)).json()
    elif KIND == "httpx-aiohttp":
        import httpx
        from httpx_aiohttp import HttpxAiohttpClient
        client = HttpxAiohttpClient(headers=HEADERS, limits=httpx.Limits(max_connections=C, max_keepalive_connections=C))
        close = client.aclose
        async def call():
            return (await client.post(URL + "/chat/completions", content=BODY)).json()
    elif KIND == "aiohttp":
        import aiohttp
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=C), headers=HEADERS)
        close = session.close
        async def call():
            async with session.post(URL + "/chat/completions", data=BODY) as response:
                return json.loads(await response.read())
    else:
        import httpx
        client = httpx.AsyncClient(headers=HEADERS, limits=httpx.Limits(max_connections=None,
                                                                        max_keepalive_connections=None))
        close = client.aclose
        async def call():
            return (await client.post(URL + "/chat/completions", content=BODY)).json()
    slots = asyncio.Semaphore(C)

    async def one():
        async with slots:
            return await call()
    await asyncio.gather(*(one() for _ in range(C)))        # the connections open
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(N)))
    print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall}))
    if close is not None:
        await close()

asyncio.run(main())
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=800)
    ap.add_argument("--inflight", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--before", help="another checkout's pytest_aqven (its folder), measured side by side")
    ap.add_argument("--httpx", action="store_true", help="add httpx's own pool (slow: about 10 ms a call)")
    args = ap.parse_args()
    clients = [("provider", "provider", str(REPO))]
    if args.before:
        clients.append(("provider (before)", "provider", args.before))
        if (Path(args.before) / "pytest_aqven" / "providers" / "http11.py").exists():
            clients.append(("http11 (before)", "http11", args.before))
    clients += [("httpx-aiohttp", "httpx-aiohttp", str(REPO)), ("aiohttp", "aiohttp", str(REPO))]
    if args.httpx:
        clients.append(("httpx (own pool)", "httpx", str(REPO)))
    server = SlowServer(args.delay)
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in clients}
    try:
        for r in range(args.rounds):
            for name, kind, path in clients:
                out = subprocess.run([sys.executable, "-c", CLIENT, str(args.calls), str(args.inflight), server.url,
                                      kind], env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True,
                                     cwd=tempfile.gettempdir())     # not this folder: PYTHONPATH picks the code
                if out.returncode:
                    sys.exit(f"{name}: exited {out.returncode}\n{out.stderr[-2000:]}")
                runs[name].append(json.loads(out.stdout))
            print(f"  round {r + 1}/{args.rounds}", file=sys.stderr)
    finally:
        server.stop()
    print(f"{args.calls} POSTs, {args.inflight} in flight, the server answers after {args.delay * 1000:.0f} ms; "
          f"medians of {args.rounds} rounds (range)")
    print("| client | CPU ms per call | wall of the calls |")
    print("|---|---|---|")
    for name, rs in runs.items():
        per = sorted(r["cpu"] / args.calls * 1000 for r in rs)
        print(f"| {name} | {statistics.median(per):.2f} ({per[0]:.2f}-{per[-1]:.2f}) "
              f"| {statistics.median(r['wall'] for r in rs):.2f} s |")


if __name__ == "__main__":
    main()
