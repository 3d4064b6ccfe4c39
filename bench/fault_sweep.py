"""The fault sweep of issue 21: each fault tried on a small project (tests/faults.py), as an unlucky user or an
attacker would, and what it left behind: provider calls against attempts, ledger rows, held-out series,
findings, and what reached the model or the disk outside the project.

    python bench/fault_sweep.py [--trials N] [--only NAME[,NAME...]]

Prints one markdown row per fault (docs/series.md and the issue note quote it, before and after the fix).
A run of every fault takes a few minutes; the test suite asserts the same outcomes (tests/test_faults*.py).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import faults  # noqa: E402
from tests import projects  # noqa: E402

HOLDOUT = ("--aqven-holdout",)
FAULTS: dict[str, tuple[str, object]] = {}


def fault(name: str, title: str):
    def register(fn):
        FAULTS[name] = (title, fn)
        return fn
    return register


def counts(root: Path, planned: int) -> str:
    o = faults.outcome(root, planned)
    return (f"calls {o['calls']} for {o['attempts']} attempts ({o['distinct']} distinct), ledger rows {o['ledger']}, "
            f"held-out series {o['series']}, findings {o['findings']}")


def tail(text: str, needle: str) -> str:
    lines = [line.strip() for line in text.splitlines() if needle in line]
    return lines[0][:160] if lines else ""


# --- held-out cases spent once -------------------------------------------------------------------

@fault("xdist_kill", "kill -9 of an xdist worker mid-series, then the same command (held-out, 2 experiments)")
def xdist_kill(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, experiments=("rate_a", "rate_b"), gate=12, sleep=0.05)
    planned = faults.attempts_planned(root)
    args = (*HOLDOUT, "-n", "2", "--aqven-concurrency", "2")
    proc = faults.start(tmp, *args)
    faults.wait_until(lambda: len(faults.calls(root)) >= 12, proc, what="12 calls")
    workers = sorted(faults.pids(root))
    faults.kill(workers[0])
    (root / "go").touch()
    proc.communicate(timeout=300)
    again = faults.run(tmp, *args)
    return counts(root, planned) + f"; rerun exit {again.returncode}"


KILL_AT_VERDICT = '''
import os, signal
def pytest_aqven_verdict(config, series, verdict, cells, finding_path):
    if os.environ.get("FAULT_KILL_AT_VERDICT") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
'''


@fault("kill_between_decisions", "kill -9 between two experiments' decisions, then the same command")
def kill_between(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, experiments=("rate_a", "rate_b"), files={"conftest.py": KILL_AT_VERDICT})
    planned = faults.attempts_planned(root)
    first = faults.run(tmp, *HOLDOUT, env={"FAULT_KILL_AT_VERDICT": "1"})
    again = faults.run(tmp, *HOLDOUT)
    return counts(root, planned) + f"; first exit {first.returncode}, rerun exit {again.returncode}"


SHORT_LEASE = '''
from pytest_aqven.series import ledger
ledger.LEASE_SECONDS = 3.0
'''


@fault("sigstop", "SIGSTOP of a runner past the lease (3 s here), a second runner, then SIGCONT")
def sigstop(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, gate=6, sleep=0.02, files={"conftest.py": SHORT_LEASE})
    planned = faults.attempts_planned(root)
    args = (*HOLDOUT, "--aqven-concurrency", "4")
    first = faults.start(tmp, *args)
    faults.wait_until(lambda: len(faults.calls(root)) >= 6 + 3, first, what="calls in flight")
    first.send_signal(signal.SIGSTOP)
    (root / "go").touch()
    second = faults.run(tmp, *args)
    first.send_signal(signal.SIGCONT)
    out = first.communicate(timeout=300)[0]
    claimed = "taken over" in out or "discarded" in out
    return counts(root, planned) + f"; exits {first.returncode}/{second.returncode}" + \
        ("; the resumed runner said its claims were taken" if claimed else "")


def holdout_once(tmp: Path) -> tuple[Path, int]:
    root = faults.make(tmp, cases=40, experiments=("rate_a", "rate_b"))
    planned = faults.attempts_planned(root)
    faults.run(tmp, *HOLDOUT)
    return root, planned


@fault("rerun", "the same held-out command again after it concluded")
def rerun(tmp: Path) -> str:
    root, planned = holdout_once(tmp)
    again = faults.run(tmp, *HOLDOUT)
    return counts(root, planned) + f"; rerun exit {again.returncode}"


@fault("lf", "pytest --aqven-holdout --lf after an inconclusive verdict")
def last_failed(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, experiments=("rate_a",))
    planned = faults.attempts_planned(root)
    exp = root / "experiments/rate_a/experiment.yaml"
    exp.write_text(exp.read_text().replace("above: 0.5", "above: 0.99"))      # too few cases to decide
    cmd = [sys.executable, "-m", "pytest", "proj", "-q", "-rs", *HOLDOUT]     # with the cache: --lf needs it
    first = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    again = subprocess.run([*cmd, "--lf"], cwd=tmp, capture_output=True, text=True)
    return counts(root, planned) + f"; exits {first.returncode}/{again.returncode}; " + \
        (tail(again.stdout, "spent") or tail(again.stdout, "rate_a ("))


def clone(root: Path, to: Path) -> Path:
    shutil.copytree(root, to, ignore=shutil.ignore_patterns(".aqven", "calls.log", "__pycache__"))
    return to


@fault("fresh_clone", "a fresh clone: finding files and FINDINGS.md committed, no .aqven/")
def fresh_clone(tmp: Path) -> str:
    root, planned = holdout_once(tmp)
    other = tmp / "clone"
    other.mkdir()
    copy = clone(root, other / "proj")
    check = faults.aqven(other, "check", "proj")
    run = faults.run(other, *HOLDOUT)
    stale = run.stdout.count("W_FINDINGS_STALE")
    return (f"aqven check exit {check.returncode} ({tail(check.stdout, 'errors:')}); held-out run exit "
            f"{run.returncode}, {stale} W_FINDINGS_STALE, " + counts(copy, planned))


@fault("set_aside_db", "a damaged database set aside, then the held-out command again")
def set_aside(tmp: Path) -> str:
    root, planned = holdout_once(tmp)
    faults.database(root).write_bytes(b"not a database" * 100)
    for side in ("-wal", "-shm"):
        Path(str(faults.database(root)) + side).unlink(missing_ok=True)
    faults.run(tmp, *HOLDOUT)          # one message: moved aside
    run = faults.run(tmp, *HOLDOUT)
    stale = run.stdout.count("W_FINDINGS_STALE")
    return f"exit {run.returncode}, {stale} W_FINDINGS_STALE, " + counts(root, planned)


# --- hostile YAML --------------------------------------------------------------------------------

LAUGHS = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))


def timed(cmd, cwd: Path, timeout: float = 60, limit_mb: int | None = None) -> tuple[str, float, float]:
    """(exit or 'hung', seconds, peak RSS MB) of a command, killed at the timeout; its output in timed.output."""
    def limits():
        if limit_mb:
            resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
    started = time.time()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, preexec_fn=limits)
        hung = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - started > timeout:
                hung = True
                os.kill(proc.pid, signal.SIGKILL)
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        timed.output = out.read().decode(errors="replace")
    return ("hung" if hung else f"exit {proc.returncode}"), time.time() - started, usage.ru_maxrss / 1024


@fault("yaml_bomb_notes", "a billion-laughs YAML in a notes/ folder")
def yaml_bomb(tmp: Path) -> str:
    root = faults.make(tmp, cases=8)
    (root / "notes").mkdir()
    (root / "notes" / "bomb.yaml").write_text(LAUGHS)
    status, seconds, rss = timed(faults.pytest_cmd(), tmp, timeout=45, limit_mb=3000)
    check, cs, _ = timed([sys.executable, "-m", "pytest_aqven.cli", "check", "proj"], tmp, timeout=45)
    return f"pytest {status} after {seconds:.0f} s ({len(faults.calls(root))} calls); aqven check {check} in {cs:.1f} s"


@fault("yaml_deep_notes", "a 990-deep YAML in a notes/ folder")
def yaml_deep(tmp: Path) -> str:
    root = faults.make(tmp, cases=8)
    (root / "notes").mkdir()
    (root / "notes" / "deep.yaml").write_text("x: " + "[" * 990 + "]" * 990 + "\n")
    run = faults.run(tmp)
    tracebacks = run.stdout.count("RecursionError")
    return f"pytest exit {run.returncode}, {len(faults.calls(root))} calls, RecursionError x{tracebacks}: " + \
        (tail(run.stdout, "passed") or tail(run.stdout, "error"))


@fault("finding_bomb", "a finding-shaped billion-laughs YAML in findings/ (aqven check, 3 GB address space)")
def finding_bomb(tmp: Path) -> str:
    root = faults.make(tmp, cases=8)
    folder = root / "experiments" / "rate_ok" / "findings"
    folder.mkdir(parents=True)
    sid = "00000000-0000-4000-8000-000000000000"
    head = "".join(f'{k}: "x"\n' for k in ("state", "statement", "self_sha256"))
    (folder / f"{sid}.yaml").write_text(f'experiment: "rate_ok"\nseries: "{sid}"\n{head}cells: []\nvariants: []\n'
                                        f'scope: {{}}\nmethod: {{}}\n' + LAUGHS + "data: *j\n")
    status, seconds, rss = timed([sys.executable, "-m", "pytest_aqven.cli", "check", "proj"], tmp, timeout=120,
                                 limit_mb=2900)
    said = tail(timed.output, "error") or timed.output.strip().splitlines()[-1][:120]
    return f"aqven check {status} in {seconds:.0f} s: {said}"


# --- files outside the project -------------------------------------------------------------------

def escape_project(tmp: Path, **kw) -> Path:
    root = faults.make(tmp, cases=8, **kw)
    outside = tmp / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text(f"{faults.SECRET}\n")
    (outside / "secret.md").write_text(f"{faults.SECRET}\n")
    return root


def escape_outcome(tmp: Path, root: Path, *args: str) -> str:
    check = faults.aqven(tmp, "check", "proj")
    codes = sorted({w.rstrip(':') for line in check.stdout.splitlines() for w in line.split() if w.startswith("E_")})
    run = faults.run(tmp, *args)
    return (f"aqven check exit {check.returncode} {','.join(codes) or '(silent)'}; the secret reached the model in "
            f"{faults.leaks(root)} of {len(faults.calls(root))} calls")


AGENT = 'apiVersion: "aqven/v1"\nkind: "Agent"\ndescription: "The test model"\nmodel: "fake:bot-1"\n'


@fault("escape_instructions", "agent instructions: \"../../outside/secret.txt\"")
def escape_instructions(tmp: Path) -> str:
    root = escape_project(tmp, files={"agents/bot.yaml": AGENT + 'instructions: "../../outside/secret.txt"\n'})
    return escape_outcome(tmp, root)


@fault("escape_instructions_root", "agent instructions: \"@root/../outside/secret.txt\"")
def escape_instructions_root(tmp: Path) -> str:
    root = escape_project(tmp, files={"agents/bot.yaml": AGENT + 'instructions: "@root/../outside/secret.txt"\n'})
    return escape_outcome(tmp, root)


PROMPT = "flows/rate/nodes/judge/judge.prompt.md"


@fault("escape_fragment_symlink", "a fragment that is a symlink to an outside file")
def escape_fragment(tmp: Path) -> str:
    root = escape_project(tmp, files={PROMPT: 'Rate it. {% include "fragments/tone" %} {{ text }}\n'
                                              '{{ output_format }}\n'})
    (root / "fragments").mkdir()
    (root / "fragments" / "tone.md").symlink_to(tmp / "outside" / "secret.md")
    return escape_outcome(tmp, root)


@fault("escape_include", "{% include \"../../outside/secret\" %} in a prompt")
def escape_include(tmp: Path) -> str:
    root = escape_project(tmp, files={PROMPT: 'Rate it. {% include "../outside/secret" %} {{ text }}\n'
                                              '{{ output_format }}\n'})
    return escape_outcome(tmp, root)


@fault("escape_prompt_symlink", "a node's prompt file that is a symlink to an outside file")
def escape_prompt(tmp: Path) -> str:
    root = escape_project(tmp)
    (root / PROMPT).unlink()
    (root / PROMPT).symlink_to(tmp / "outside" / "secret.md")
    return escape_outcome(tmp, root)


@fault("escape_code_symlink", "a node's code file that is a symlink to an outside module")
def escape_code(tmp: Path) -> str:
    root = escape_project(tmp)
    (tmp / "outside" / "evil.py").write_text(f'def clean(text):\n    return {{"text": "{faults.SECRET}"}}\n')
    code = root / "flows/rate/nodes/clean/clean.py"
    code.unlink()
    code.symlink_to(tmp / "outside" / "evil.py")
    return escape_outcome(tmp, root)


@fault("escape_dataset_symlink", "a dataset that is a symlink to an outside file")
def escape_dataset(tmp: Path) -> str:
    root = escape_project(tmp)
    data = root / "datasets" / "reviews.yaml"
    text = data.read_text().replace('text: "fine"', f'text: "{faults.SECRET}"')
    (tmp / "outside" / "reviews.yaml").write_text(text)
    data.unlink()
    data.symlink_to(tmp / "outside" / "reviews.yaml")
    return escape_outcome(tmp, root)


@fault("escape_findings_symlink", "a findings folder that is a symlink outside the project (held-out run)")
def escape_findings(tmp: Path) -> str:
    root = escape_project(tmp)
    (tmp / "outside" / "findings").mkdir()
    (root / "experiments" / "rate_ok" / "findings").symlink_to(tmp / "outside" / "findings")
    said = escape_outcome(tmp, root, *HOLDOUT)
    written = len(list((tmp / "outside" / "findings").glob("*.yaml")))
    return said + f"; finding files written outside the project: {written}"


MEDIA_FILES = {
    "types/records/review.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Type"
        type: "record"
        description: "A review"
        fields:
        - name: "text"
          type: "Text"
        - name: "photo"
          type: "Image?"
        ''',
    "flows/rate/nodes/judge/judge.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Rate the review"
        agent: "bot"
        in:
        - name: "text"
          from: "$clean.out.text"
        - name: "photo"
          from: "$input.photo"
        ''',
    "flows/rate/nodes/judge/judge.inference.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Inference"
        description: "The sentiment of a review"
        in:
        - name: "text"
          type: "Text"
        - name: "photo"
          type: "Image?"
        out:
        - name: "label"
          type: "Label"
        ''',
}


@fault("escape_media", "a case's media file \"@root/../outside/secret.txt\"")
def escape_media(tmp: Path) -> str:
    root = escape_project(tmp, files=MEDIA_FILES)
    data = root / "datasets" / "reviews.yaml"
    data.write_text(data.read_text().replace('    text: "fine"\n', '    text: "fine"\n    photo: {"$media": '
                                             '"image/png", "file": "@root/../outside/secret.txt"}\n'))
    said = escape_outcome(tmp, root)
    errors = {r[0] for r in faults.query(root, "SELECT json_extract(record, '$.error_code') FROM aqven_series_attempts")}
    return said + f"; attempt errors {sorted(e or 'none' for e in errors)}"


# --- providers, secrets, sizes -------------------------------------------------------------------

class Bomb(BaseHTTPRequestHandler):
    """Chat completions answered with a gzip body that inflates to `inflated` bytes."""
    protocol_version = "HTTP/1.1"
    inflated = 1 << 30
    requests = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).requests += 1
        body = _bomb(type(self).inflated)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


_BOMBS: dict[int, bytes] = {}


def _bomb(size: int) -> bytes:
    if size not in _BOMBS:
        out = gzip.compress(b"", mtime=0)
        compressor = __import__("zlib").compressobj(9, 8, 31)
        chunk = b" " * (1 << 20)
        parts = [compressor.compress(chunk) for _ in range(size >> 20)]
        parts.append(compressor.flush())
        _BOMBS[size] = b"".join(parts)
        del out
    return _BOMBS[size]


def http_project(tmp: Path, url: str, model: str = "m1", catalog: str | None = None, cases: int = 8) -> Path:
    """The fault project on a local server: an openai_compatible provider `local`, or the catalog prefix
    `catalog` (its prices known to genai-prices) with its base URL pointed at the server."""
    root = faults.make(tmp, cases=cases)
    pid = catalog or "local"
    kind = "catalog" if catalog else "openai_compatible"
    key = "" if catalog else 'api_key: "ref:env/LOCAL_LLM_KEY"'
    (root / "aqven.yaml").write_text(f'''apiVersion: "aqven/v1"
kind: "Project"
description: "A project on a local server"
package: "{faults.PACKAGE}"
providers:
- id: "{pid}"
  kind: "{kind}"
  base_url: "{url}"
  {key}
  params: {{retries: 0, timeout_s: 60}}
  data_policy:
    allows_pii: false
    allows_sensitive: false
    retention: "zero"
''')
    (root / "agents" / "bot.yaml").write_text(AGENT.replace("fake:bot-1", f"{pid}:{model}"))
    (root / ".env").write_text("LOCAL_LLM_KEY=sk-local-0123456789\n")
    return root


@fault("gzip_bomb", "a gzip body from the provider that inflates to 1 GiB (one attempt)")
def gzip_bomb(tmp: Path) -> str:
    Bomb.inflated, Bomb.requests = 1 << 30, 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Bomb)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        root = http_project(tmp, f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        status, seconds, rss = timed(faults.pytest_cmd("--aqven-cases", "1"), tmp, timeout=120)
    finally:
        httpd.shutdown()
    codes = sorted({r[0] or "none" for r in faults.query(root, "SELECT json_extract(record, '$.error_code') FROM aqven_series_attempts")})
    return f"pytest {status} in {seconds:.0f} s, peak RSS {rss:.0f} MB, attempt errors {codes}"


LEAKY_PROVIDER = '''
    if "fine" in text:
        raise RuntimeError("the vendor SDK refused key " + os.environ["OPENAI_API_KEY"] + ": 401")
'''
ENV_KEY = "sk-proj-fault-7c4b1e9d2a6f3081"


@fault("env_key_in_exception", "a function provider raising an error that holds OPENAI_API_KEY from the environment")
def env_key(tmp: Path) -> str:
    root = faults.make(tmp, cases=8, extra=LEAKY_PROVIDER)
    run = faults.run(tmp, "--junitxml", "out.xml", "--html", "out.html", env={"OPENAI_API_KEY": ENV_KEY})
    places = []
    if any(ENV_KEY in (r[0] or "") for r in faults.query(root, "SELECT record FROM aqven_series_attempts")):
        places.append("database")
    for name in ("out.xml", "out.html"):
        if (tmp / name).exists() and ENV_KEY in (tmp / name).read_text():
            places.append(name)
    if ENV_KEY in run.stdout:
        places.append("terminal")
    return "the key reached: " + (", ".join(places) or "nothing")


@fault("big_answer", "a 20 MB answer from a function provider (8 attempts)")
def big_answer(tmp: Path) -> str:
    inference = projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"].rstrip(" ") + \
        '        - name: "reason"\n          type: "Text"\n'
    root = faults.make(tmp, cases=16, answer='{"label": "positive", "reason": "' + "x" * (20 << 20) + '"}',
                       files={"flows/rate/nodes/judge/judge.inference.yaml": inference})
    status, seconds, rss = timed(faults.pytest_cmd(), tmp, timeout=300)
    size = sum(len(r[0]) for r in faults.query(root, "SELECT record FROM aqven_series_attempts"))
    n = max(1, faults.finished(root))
    return f"pytest {status}, peak RSS {rss:.0f} MB, {size / n / 1e6:.1f} MB stored per attempt"


class Usage(BaseHTTPRequestHandler):
    """Chat completions that report usage in proportion to the request's size (no cost: priced by genai-prices)."""
    protocol_version = "HTTP/1.1"
    requests = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).requests += 1
        data = json.dumps({"id": "x", "object": "chat.completion", "model": "gpt-4o",
                           "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": 5},
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": '{"label": "positive"}'}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@fault("big_input", "one 25 MB input under the $1.00 cap, on a model with a known price (gpt-4o)")
def big_input(tmp: Path) -> str:
    Usage.requests = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Usage)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        root = http_project(tmp, f"http://127.0.0.1:{httpd.server_address[1]}/v1", model="gpt-4o", catalog="openai",
                            cases=2)
        data = root / "datasets" / "reviews.yaml"
        data.write_text(data.read_text().replace('text: "fine"', 'text: "' + "word " * (5 << 20) + '"'))
        run = faults.run(tmp, "--aqven-cases", "1", env={"OPENAI_API_KEY": "sk-x-0123456789"})
    finally:
        httpd.shutdown()
    spent = faults.query(root, "SELECT SUM(spend_usd) FROM aqven_spend")
    codes = sorted({r[0] or "none" for r in faults.query(root, "SELECT json_extract(record, '$.error_code') FROM aqven_series_attempts")})
    return f"{Usage.requests} requests sent, ledger ${float(spent[0][0] or 0):.2f} of the $1.00 cap, attempt errors {codes}"


# --- write failures, cancel, approve, edits -----------------------------------------------------

DISK_FULL = '''
import errno, os, pathlib
_write = pathlib.Path.write_text
def _full(self, data, *args, **kwargs):
    if os.environ.get("FAULT_DISK_FULL") == "1" and ("findings" in self.parts or "FINDINGS.md" in self.name):
        with open(self, "w") as f:
            f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")
    return _write(self, data, *args, **kwargs)
pathlib.Path.write_text = _full
'''


@fault("disk_full_finding", "disk full at the finding write (held-out), then the same command with space again")
def disk_full(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, files={"conftest.py": DISK_FULL})
    planned = faults.attempts_planned(root)
    full = faults.run(tmp, *HOLDOUT, env={"FAULT_DISK_FULL": "1"})
    verdict = "verdict line shown" if "rate_ok (holdout" in full.stdout else "no verdict line"
    tmps = len([p for p in (root / "experiments").rglob("*.tmp")]) + len(list(root.glob(".*.tmp")))
    said = tail(full.stdout, "could not") or tail(full.stdout, "space")
    again = faults.run(tmp, *HOLDOUT)
    return (f"exit {full.returncode}, {verdict}, {tmps} .tmp files left ({said}); with space: exit {again.returncode}, "
            + counts(root, planned))


@fault("unwritable_findings", "an unwritable experiment folder (chattr +i) at a held-out run")
def unwritable(tmp: Path) -> str:
    root = faults.make(tmp, cases=40)
    folder = root / "experiments" / "rate_ok"
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        return "chattr +i not available"
    try:
        run = faults.run(tmp, *HOLDOUT)
    finally:
        subprocess.run(["chattr", "-i", str(folder)])
    said = tail(run.stdout + run.stderr, "findings") or tail(run.stdout, "could not")
    return f"exit {run.returncode}, {len(faults.calls(root))} calls paid first; {said}"


@fault("cancel_at_decision", "aqven series cancel while the last attempt is in flight")
def cancel_at_decision(tmp: Path) -> str:
    root = faults.make(tmp, cases=40)
    planned = faults.attempts_planned(root)
    (root / "provider.py").write_text(faults.PROVIDER.format(gate=planned, sleep=0.0, secret=faults.SECRET,
                                                             answer='{"label": "positive"}', cost=0.001, extra=""))
    proc = faults.start(tmp, *HOLDOUT)
    faults.wait_until(lambda: len(faults.calls(root)) >= planned, proc, what="the last call")
    sid = faults.series(root)[0]["series_id"]
    cancel = faults.aqven(tmp, "series", "cancel", sid, "--path", "proj")
    (root / "go").touch()
    out = proc.communicate(timeout=120)[0]
    s = faults.series(root)[0]
    return (f"cancel exit {cancel.returncode}; series {s['status']}, verdict "
            f"{(s.get('verdict') or {}).get('state')}, findings {len(faults.finding_files(root))}; exit {proc.returncode}")


def paused(tmp: Path) -> tuple[Path, str]:
    root = faults.make(tmp, cases=40, cost=0.01)
    (root / "aqven.yaml").write_text((root / "aqven.yaml").read_text() + "research:\n  spend_cap_usd: 0.05\n")
    faults.run(tmp)
    s = faults.series(root)[0]
    assert s["status"] == "awaiting_approval", s["status"]
    return root, s["series_id"]


@fault("approve_vs_cancel", "aqven series approve while a cancel lands before its confirmation")
def approve_vs_cancel(tmp: Path) -> str:
    root, sid = paused(tmp)
    prompted = faults.approve_prompted(tmp, sid, "0.40")
    faults.aqven(tmp, "series", "cancel", sid, "--path", "proj")
    code, text = faults.confirm(prompted)
    said = tail(text, "approved") or tail(text, "cancel")
    return f"approve exit {code}: \"{said}\"; the database holds {faults.series(root)[0]['status']}"


@fault("approve_vs_approve", "two aqven series approve at once ($0.40 and $0.08)")
def approve_vs_approve(tmp: Path) -> str:
    root, sid = paused(tmp)
    first, second = faults.approve_prompted(tmp, sid, "0.40"), faults.approve_prompted(tmp, sid, "0.08")
    code_a, _ = faults.confirm(first)
    code_b, text_b = faults.confirm(second)
    cap = faults.series(root)[0]["cap_usd"]
    return (f"first exit {code_a}, second exit {code_b}: \"{tail(text_b, 'approved')}\"; "
            f"the database holds cap ${float(cap):.2f}")


@fault("dataset_edit_after_kill", "a dataset edit between a killed run and its rerun")
def dataset_edit(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, gate=8, sleep=0.02)
    proc = faults.start(tmp, "--aqven-concurrency", "2")
    faults.wait_until(lambda: len(faults.calls(root)) >= 8 and faults.finished(root) > 0, proc, what="a finish")
    faults.kill(proc.pid)
    proc.wait()
    (root / "go").touch()
    data = root / "datasets" / "reviews.yaml"
    data.write_text(data.read_text() + '- name: "added"\n  inputs:\n    text: "fine"\n  expected_output:\n'
                                       '    label: "positive"\n')
    run = faults.run(tmp, "--aqven-concurrency", "2")
    statuses = [s["status"] for s in faults.series(root)]
    said = tail(run.stdout, "closed") or tail(run.stdout, "inputs")
    return f"series statuses {statuses}; " + (f"said: \"{said}\"" if said else "nothing said")


@fault("prompt_cp_p", "a prompt changed mid-series and restored with its old mtime (cp -p), under -n 2")
def prompt_cp_p(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, gate=4, sleep=0.02)
    prompt = root / PROMPT
    original = prompt.read_text()
    keep = tmp / "prompt.keep"
    shutil.copy2(prompt, keep)
    proc = faults.start(tmp, "-n", "2")
    faults.wait_until(lambda: len(faults.calls(root)) >= 4, proc, what="calls in flight")
    changed = tmp / "prompt.changed"
    changed.write_text(original.replace("Rate", "Grad"))
    shutil.copystat(keep, changed)
    shutil.copy2(changed, prompt)            # cp -p: new content, the old mtime and size
    (root / "go").touch()
    out = proc.communicate(timeout=300)[0]
    line = tail(out, "rate_ok (dev")
    return f"verdict: {line or 'none'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--only", default="")
    parser.add_argument("--code", default=None, metavar="DIR",
                        help="run the faults on the pytest_aqven of another checkout (e.g. an older commit's)")
    args = parser.parse_args()
    if args.code:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (args.code, os.environ.get("PYTHONPATH"))))
    only = [n for n in args.only.split(",") if n]
    print("| fault | trials | outcome |")
    print("|---|---|---|")
    for name, (title, fn) in FAULTS.items():
        if only and name not in only:
            continue
        outcomes = []
        for _ in range(args.trials):
            with tempfile.TemporaryDirectory(prefix=f"fault-{name}-") as tmp:
                try:
                    outcomes.append(fn(Path(tmp)))
                except Exception as exc:  # noqa: BLE001 - a fault the harness could not drive is a row too
                    outcomes.append(f"harness: {type(exc).__name__}: {str(exc)[:200]}")
                finally:
                    for p in Path(tmp).rglob("*"):
                        subprocess.run(["chattr", "-i", str(p)], capture_output=True) if p.is_dir() else None
        distinct = list(dict.fromkeys(outcomes))
        shown = distinct[0] if len(distinct) == 1 else " / ".join(f"{outcomes.count(o)}x {o}" for o in distinct)
        print(f"| {title} | {args.trials} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
