"""HTTP providers against the local chat-completions server of the test suite, measured in one run:

1. fault kind -> call outcome, transport retries observed, and the attempt outcome it leads to;
2. the request rate under `pytest -n 2` with `limits.rpm` set, against the limit (and without a limit,
   side by side, so the ratio shows the limiter and not the machine);
3. a series recorded with --aqven-record, replayed offline with --aqven-replay: verdict lines compared;
4. a canary key echoed by the server and raised by the flow's code: occurrences in every file the run
   wrote and in the terminal output.

    PYTHONPATH=. python bench/bench_providers.py [--rpm 60] [--attempts 12]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_aqven.codes import outcome_of  # noqa: E402
from pytest_aqven.providers.base import Message, ModelRequest, ProviderError, ToolDef  # noqa: E402
from pytest_aqven.providers.openai_compat import OpenAICompatProvider, RetryPolicy  # noqa: E402
from tests.providers.openai_server import Server  # noqa: E402
from tests.providers.test_plugin_http import CANARY, make_files, split_cases, verdict_of  # noqa: E402

FAULTS = [  # (label, script, what the attempt's agent does with the outcome, by the default policies)
    ("ok", ["ok"]), ("delay 0.3 s", ["delay:0.3"]), ("429 Retry-After 0.2, then ok", ["429:0.2"]),
    ("429 x2 no Retry-After, then ok", ["429", "429"]), ("500, then ok", ["500"]), ("503 x2, then ok", ["503", "503"]),
    ("dropped connection, then ok", ["drop"]), ("timeout, then ok", ["timeout"]),
    ("500 on every request", ["500"] * 10), ("429 Retry-After 600", ["429:600"]), ("400 client error", ["400"]),
    ("401 client error", ["401"]), ("truncated (length)", ["length"]), ("refusal", ["refusal"]),
    ("content filter", ["content_filter"]), ("malformed JSON", ["malformed"]), ("tool call", ["tool"]),
    ("usage without cost", ["nocost"]),
]
LOOKUP = ToolDef("lookup_order", "find an order", {"type": "object", "properties": {}})
CALL_CODE = {"refusal": "refusal", "truncated": "truncated", "error": "provider_error", "ok": None}


def fault_table() -> None:
    server = Server().start()
    server.hang_s = 1.0
    retry = RetryPolicy(retries=3, base_s=0.05, cap_s=0.5, total_s=5.0)
    provider = OpenAICompatProvider(provider_id="local", base_url=server.url, api_key="sk-bench-000000",
                                    catalog=None, timeout_s=0.5, retry=retry)
    print("| fault | call outcome | retries observed | cost (source) | attempt outcome |")
    print("|---|---|---|---|---|")
    try:
        for label, script in FAULTS:
            model = f"m-{label}"
            server.script(model, *script)
            req = ModelRequest(model, (Message("system", "Rate it."), Message("user", "fine")), tools=(LOOKUP,))
            try:
                r = asyncio.run(provider.complete(req))
                outcome, retries = r.outcome, r.retries
                cost = f"{r.cost_usd} ({r.cost_source})"
                code = CALL_CODE[outcome]
                if r.tool_calls:
                    outcome = f"ok, tool_calls {[c.name for c in r.tool_calls]}"
            except ProviderError as exc:
                outcome, retries, cost, code = f"error {exc.code}", exc.retries, "-", exc.code
            causes = ", ".join(f"{c} ({w:g} s)" for c, w in retries) or "none"
            print(f"| {label} | {outcome} | {len(retries)}: {causes} | {cost} | {outcome_of(code)} |")
    finally:
        server.stop()


def run_pytest(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "proj", "-p", "no:cacheprovider", *args],
                          cwd=root, capture_output=True, text=True, env={**os.environ, **(env or {})})


def rate(rpm: int, attempts: int) -> None:
    for limit in (rpm, None):
        with tempfile.TemporaryDirectory() as tmp:
            server = Server().start()
            try:
                make_files(Path(tmp) / "proj", server, split_cases(attempts),
                           limits=f"  limits: {{rpm: {limit}}}" if limit else "")
                run_pytest(Path(tmp), "-n", "2")
                times = sorted(r["t"] for r in server.requests)
            finally:
                server.stop()
        measured = (len(times) - 1) / (times[-1] - times[0]) * 60
        if limit:
            print(f"-n 2, limits.rpm {limit}: {len(times)} requests at {measured:.0f}/min "
                  f"= {measured / limit:.2f} x the limit")
        else:
            print(f"-n 2, no limit:      {len(times)} requests at {measured:.0f}/min (for scale)")


def replay() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = Server().start()
        try:
            make_files(root / "proj", server, [*split_cases(8, prefix="ok"), *split_cases(3, text="wrong", prefix="bad")],
                       repeats=2)
            server.script("m1", "500", "429:0")
            recorded = verdict_of(run_pytest(root, "--aqven-record", "-n", "2").stdout)
            sent = len(server.requests)
        finally:
            server.stop()
        (root / "proj" / ".env").unlink()
        for path in (root / "proj" / ".aqven").glob("aqven.sqlite*"):
            path.unlink()
        replayed = verdict_of(run_pytest(root, "--aqven-replay").stdout)
    print(f"recorded ({sent} HTTP requests): {recorded}")
    print(f"replayed (server stopped, no key): {replayed}")
    print("identical verdict line" if recorded == replayed else "DIFFERENT verdict line")


def canary() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = Server().start()
        try:
            cases = [(n, "leak" if i == 0 else "fine") for i, (n, _) in enumerate(split_cases(44, "holdout"))]
            make_files(root / "proj", server, cases, above=0.5)
            server.script("m1", "401")
            before = {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}
            result = run_pytest(root, "--aqven-holdout", "-rA", "-v", "--junitxml=junit.xml", "--html=report.html",
                                env={"LOCAL_LLM_KEY": CANARY})
        finally:
            server.stop()
        written = [p for p in root.rglob("*") if p.is_file() and before.get(p) != p.stat().st_mtime_ns]
        hits = {p.relative_to(root).as_posix(): p.read_bytes().count(CANARY.encode()) for p in written}
        terminal = (result.stdout + result.stderr).count(CANARY)
        echoed = len([r for r in server.requests if r["authorization"] == f"Bearer {CANARY}"])
    print(f"the key was sent on {echoed} requests; the server echoed it in a 401, the flow's code raised with it")
    for name, count in sorted(hits.items()):
        print(f"  {count}  {name}")
    print(f"  {terminal}  terminal output (stdout + stderr)")
    print("canary found nowhere" if not any(hits.values()) and not terminal else "CANARY LEAKED")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rpm", type=int, default=60)
    parser.add_argument("--attempts", type=int, default=12)
    args = parser.parse_args()
    started = time.perf_counter()
    print("## fault kind -> outcome\n")
    fault_table()
    print("\n## request rate under -n 2\n")
    rate(args.rpm, args.attempts)
    print("\n## record, then replay offline\n")
    replay()
    print("\n## canary key\n")
    canary()
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
