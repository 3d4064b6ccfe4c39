"""A project for fault injection and what to measure after a fault: provider calls against attempts, ledger
rows, series, findings. Used by the fault tests (tests/*/test_faults*.py and others) and bench/fault_sweep.py (the
before/after table).

The provider appends one line per paid call to calls.log (experiment|variant|case|repeat|pid) and one line
to leaks.log for every call whose messages hold SECRET (a file outside the project that must never reach a
model). From the `gate`th call on, answers wait for a file `go`, so a fault always meets attempts in flight.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from . import projects

PACKAGE = "faultproj"
SECRET = "SECRET-9b1f0c2e-outside-the-project"

PROVIDER = '''
import asyncio, os
from pathlib import Path
from pytest_aqven import ModelRequest, ModelResponse

HERE = Path(__file__).parent
GATE = {gate}


async def complete(request: ModelRequest) -> ModelResponse:
    a = request.attempt
    await asyncio.sleep({sleep})
    text = "\\n".join(m.content if isinstance(m.content, str) else str(m.content) for m in request.messages)
    if {secret!r} in text:
        with open(HERE / "leaks.log", "a") as f:
            f.write(f"{{a.case}}\\n")
    with open(HERE / "calls.log", "a") as f:          # one short append per paid call: atomic across processes
        f.write(f"{{a.experiment}}|{{a.variant}}|{{a.case}}|{{a.repeat}}|{{os.getpid()}}\\n")
    calls = len((HERE / "calls.log").read_text().splitlines())
    while GATE and calls >= GATE and not (HERE / "go").exists():
        await asyncio.sleep(0.02)
{extra}
    return ModelResponse(text={answer!r}, tokens_in=10, tokens_out=3, cost_usd={cost})
'''


def provider(*, gate: int = 0, sleep: float = 0.0, cost: float | None = 0.001,
             answer: str = '{"label": "positive"}', extra: str = "") -> str:
    """The counting provider's code (provider.py of a project): `extra` runs before each answer."""
    return PROVIDER.format(gate=gate, sleep=sleep, secret=SECRET, answer=answer, cost=cost, extra=extra)


def make(folder: Path, *, cases: int = 24, experiments: tuple[str, ...] = ("rate_ok",), repeats: int = 1,
         gate: int = 0, sleep: float = 0.0, cost: float = 0.001, answer: str = '{"label": "positive"}',
         extra: str = "", files: dict | None = None, plan_cases: int | None = None) -> Path:
    """The test project of tests/projects.py with the counting provider; `cases` cases (about half held out)."""
    code = provider(gate=gate, sleep=sleep, cost=cost, answer=answer, extra=extra)
    return projects.make(folder / "proj", cases, experiments=experiments, repeats=repeats, cases=plan_cases,
                         package=PACKAGE, files={"provider.py": code, **(files or {})})


def pytest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "proj", "-p", "no:cacheprovider", "-q", "-rs", *args]


def run(cwd: Path, *args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(pytest_cmd(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def start(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(pytest_cmd(*args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})})


def aqven(cwd: Path, *args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_aqven.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, **kw)


def calls(root: Path) -> list[str]:
    """experiment|variant|case|repeat of every paid call."""
    log = root / "calls.log"
    return ["|".join(line.split("|")[:4]) for line in log.read_text().splitlines()] if log.exists() else []


def pids(root: Path) -> set[int]:
    log = root / "calls.log"
    return {int(line.split("|")[4]) for line in log.read_text().splitlines()} if log.exists() else set()


def leaks(root: Path) -> int:
    log = root / "leaks.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def wait_until(done, proc: subprocess.Popen | None = None, timeout: float = 120, what: str = "") -> None:
    deadline = time.time() + timeout
    while not done():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended before: {what}\n{proc.stdout.read() if proc.stdout else ''}")
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        time.sleep(0.05)


def database(root: Path) -> Path:
    return root / ".aqven" / "aqven.sqlite"


def query(root: Path, sql: str, *params) -> list[tuple]:
    if not database(root).exists():
        return []
    conn = sqlite3.connect(database(root), timeout=60)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def finished(root: Path) -> int:
    return len(query(root, "SELECT 1 FROM aqven_series_attempts WHERE state = 'finished'"))


def ledger_rows(root: Path) -> int:
    return len(query(root, "SELECT 1 FROM aqven_spend"))


def series(root: Path, split: str | None = None) -> list[dict]:
    rows = query(root, "SELECT series_id, experiment_id, split, status, record FROM aqven_series ORDER BY created_at")
    return [{**json.loads(r[4]), "series_id": r[0], "experiment": r[1], "split": r[2], "status": r[3]}
            for r in rows if split is None or r[2] == split]


def finding_files(root: Path) -> list[Path]:
    return sorted((root / "experiments").glob("*/findings/*.yaml"))


def attempts_planned(root: Path, split: str = "holdout") -> int:
    """Attempts of one series per experiment, as collected: the size a fault must not inflate."""
    from pytest_aqven.experiments.plan import plan
    from pytest_aqven.project.loader import load_project
    project = load_project(root)
    return sum(plan(project, e, split).attempts for e in project.experiments.values())


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def xdist_workers(proc: subprocess.Popen) -> list[int]:
    """The pids of an xdist run's worker processes (children of the controller running pytest)."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def outcome(root: Path, planned: int) -> dict:
    """What a fault left behind."""
    return {"calls": len(calls(root)), "distinct": len(set(calls(root))), "attempts": planned,
            "ledger": ledger_rows(root), "finished": finished(root), "series": len(series(root, "holdout")),
            "findings": len(finding_files(root)), "leaks": leaks(root)}


def held(ledger, record: dict) -> int:
    """The generation of the claim `ledger`'s runner holds on the record's attempt (0: none), to finish it with."""
    from pytest_aqven.series.db import attempt_id
    row = ledger.store.db.raw.execute(
        "SELECT generation FROM aqven_claims WHERE attempt_id = ? AND runner_id = ?",
        (attempt_id(record["series_id"], record["variant"], record["case"], record["repeat"]), ledger.runner_id)
    ).fetchone()
    return row[0] if row else 0


def approve_prompted(cwd: Path, series_id: str, cap: str):
    """`aqven series approve --cap CAP` on a pseudo-terminal, stopped at its confirmation prompt:
    (process, terminal, output so far). `confirm` types the answer."""
    import pty
    import select
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pytest_aqven.cli", "series", "approve", series_id, "--path",
                             "proj", "--cap", cap], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.time() + 60
    while b"Type yes" not in out:
        ready, _, _ = select.select([master], [], [], 1)
        assert time.time() < deadline and proc.poll() is None, out
        if ready:
            out += os.read(master, 4096)
    return proc, master, out


def confirm(prompted, answer: str = "yes") -> tuple[int, str]:
    """Type the answer at the prompt of approve_prompted; (exit code, everything the command printed)."""
    proc, master, out = prompted
    os.write(master, answer.encode() + b"\n")
    return drive(proc, master, out)


def drive(proc: subprocess.Popen, master: int, out: bytes = b"", answers: list[str] | None = None) -> tuple[int, str]:
    """Read a command's pseudo-terminal to its end, typing each of `answers` at the next prompt (a line that
    ends with a colon), as a person would; (exit code, everything it printed)."""
    import select
    pending = list(answers or [])
    deadline = time.time() + 60
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if pending and out.rstrip().endswith(b":"):
                os.write(master, pending.pop(0).encode() + b"\n")
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    return proc.returncode, out.decode(errors="replace")


def add_cases(root: Path, names: list[str], text: str = "fine") -> None:
    """Append cases to the dataset (expected label positive), as a person adds them."""
    data = root / "datasets" / "reviews.yaml"
    data.write_text(data.read_text() + "".join(f'- name: "{name}"\n  inputs:\n    text: "{text}"\n  expected_output:\n'
                                               f'    label: "positive"\n' for name in names))


# --- hostile files and fault points ---------------------------------------------------------------

# a billion laughs: nine levels of nine aliases (aliases are refused: it is never expanded)
LAUGHS = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(9))
DEEP = "x: " + "[" * 990 + "]" * 990 + "\n"


def finding_bomb(root: Path) -> Path:
    """A finding-shaped billion laughs: every key a finding needs, its data an alias of the last level."""
    folder = root / "experiments" / "rate_ok" / "findings"
    folder.mkdir(parents=True, exist_ok=True)
    sid = "00000000-0000-4000-8000-000000000000"
    head = "".join(f'{k}: "x"\n' for k in ("state", "statement", "self_sha256"))
    path = folder / f"{sid}.yaml"
    path.write_text(f'experiment: "rate_ok"\nseries: "{sid}"\n{head}cells: []\nvariants: []\n'
                    f"scope: {{}}\nmethod: {{}}\n{LAUGHS}data: *j\n")
    return path


# a conftest.py for the fault project: kill -9 at the first verdict the session reports (FAULT_KILL_AT_VERDICT=1)
KILL_AT_VERDICT = '''
import os, signal
def pytest_aqven_verdict(config, series, verdict, cells, finding_path):
    if os.environ.get("FAULT_KILL_AT_VERDICT") == "1":
        os.kill(os.getpid(), signal.SIGKILL)
'''
# a conftest.py: the process FAULT_KILL_AFTER_REPORT names ("gw0": that xdist worker; "main": a run without xdist)
# holds back the finish of its third attempt (its record never commits, as in the group commit's window) and
# kills itself with -9 right after that attempt's report went out (to the xdist controller)
KILL_AFTER_REPORT = '''
import os, signal
import pytest
from pytest_aqven.record import AttemptRecord
from pytest_aqven.series import ledger

HELD = []


def pytest_configure(config):
    me = config.workerinput["workerid"] if hasattr(config, "workerinput") else "main"
    if me != os.environ.get("FAULT_KILL_AFTER_REPORT"):
        return
    finish_later, seen = ledger.Ledger.finish_later, []

    def held_back(self, record, generation):
        seen.append(1)
        if len(seen) == 3:
            HELD.append((record["series_id"], record["variant"], record["case"], record["repeat"]))
        else:
            finish_later(self, record, generation)
    ledger.Ledger.finish_later = held_back


@pytest.hookimpl(trylast=True)              # after xdist sent the report to its controller
def pytest_runtest_logreport(report):
    carried = getattr(report, "aqven_attempt", None)
    record = AttemptRecord.carried(carried) if carried is not None else None
    if HELD and record and (record.series_id, record.variant, record.case, record.repeat) == HELD[0]:
        os.kill(os.getpid(), signal.SIGKILL)
'''
# a conftest.py: each process that collects (one, or each xdist worker) marks it with a file collected-<pid> and
# waits there for a file `go-on` (FAULT_HOLD_AFTER_COLLECTION=1): another run goes between collection and the run
HOLD_AFTER_COLLECTION = '''
import os, pathlib, time
def pytest_collection_finish(session):
    if os.environ.get("FAULT_HOLD_AFTER_COLLECTION") == "1":
        here = pathlib.Path(__file__).parent
        (here / f"collected-{os.getpid()}").touch()
        while not (here / "go-on").exists():
            time.sleep(0.02)
'''


def collected(root: Path) -> int:
    """How many processes of a run started with FAULT_HOLD_AFTER_COLLECTION=1 collected and wait for `go-on`."""
    return len(list(root.glob("collected-*")))


# a conftest.py: a lease of 3 s, so a runner stopped for longer loses its claims in a test's time
SHORT_LEASE = "from pytest_aqven.series import ledger\nledger.LEASE_SECONDS = 3.0\n"
# a conftest.py: the disk fills up while a finding or FINDINGS.md is written (FAULT_DISK_FULL=1)
DISK_FULL = '''
import errno, os, pathlib
_write = pathlib.Path.write_text
def _full(self, data, *args, **kwargs):
    if os.environ.get("FAULT_DISK_FULL") == "1" and ("findings" in self.parts or "FINDINGS.md" in self.name):
        with open(self, "w") as f:
            f.write(data[: len(data) // 2])          # what fitted before the disk filled up
        raise OSError(errno.ENOSPC, "No space left on device")
    return _write(self, data, *args, **kwargs)
pathlib.Path.write_text = _full
'''
# the provider's extra lines: an error that holds keys it read from the environment and .env itself
ENV_KEY_LEAK = '''
    if "fine" in text:
        raise RuntimeError("the vendor SDK refused key " + os.environ["OPENAI_API_KEY"] + " (and "
                           + os.environ["SERVICE_TOKEN"] + ", " + os.environ["DB_PASSWORD_MAIN"] + ", "
                           + open(HERE / ".env").read().split("=", 1)[1].strip() + "): 401")
'''


class Usage(BaseHTTPRequestHandler):
    """Chat completions on 127.0.0.1 that report usage in proportion to the request and no cost, so
    genai-prices prices them (a catalog prefix pointed here knows its model's price)."""
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


def on_catalog_server(root: Path, url: str, model: str = "gpt-4o") -> None:
    """The project's provider becomes the catalog prefix `openai` (prices known), pointed at `url`."""
    (root / "aqven.yaml").write_text((root / "aqven.yaml").read_text().replace(
        '- id: "fake"\n  kind: "code"\n  run: "@root.provider:complete"',
        f'- id: "openai"\n  base_url: "{url}"\n  params: {{retries: 0}}'))
    agent = root / "agents" / "bot.yaml"
    agent.write_text(agent.read_text().replace("fake:bot-1", f"openai:{model}"))


# --- ways out of the project --------------------------------------------------------------------

PROMPT = "flows/rate/nodes/judge/judge.prompt.md"
AGENT = 'apiVersion: "aqven/v1"\nkind: "Agent"\ndescription: "The test model"\nmodel: "fake:bot-1"\n'
MEDIA = {
    "types/records/review.yaml": projects.FILES["types/records/review.yaml"].rstrip(" ")
    + '        - name: "photo"\n          type: "Image?"\n',
    "flows/rate/nodes/judge/judge.node.yaml": projects.FILES["flows/rate/nodes/judge/judge.node.yaml"].rstrip(" ")
    + '        - name: "photo"\n          from: "$input.photo"\n',
    "flows/rate/nodes/judge/judge.inference.yaml": projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"]
    .replace('        out:\n', '        - name: "photo"\n          type: "Image?"\n        out:\n'),
}
ESCAPES = {     # kind -> the file its diagnostic names
    "instructions": "agents/bot.yaml", "instructions_root": "agents/bot.yaml", "fragment": "fragments/tone.md",
    "include": PROMPT, "prompt": PROMPT, "experiment_prompt": "experiments/rate_ok/prompts/terse.md",
    "code": "flows/rate/nodes/clean/clean.node.yaml", "dataset": "datasets/reviews.yaml",
    "findings": "experiments/rate_ok/findings", "media": "datasets/reviews.yaml"}


def outside(folder: Path) -> Path:
    """Files beside the project that must never reach a model: they hold SECRET."""
    out = folder / "outside"
    out.mkdir(exist_ok=True)
    for name in ("secret.txt", "secret.md"):
        (out / name).write_text(f"{SECRET}\n")
    (out / "evil.py").write_text(f'def clean(text):\n    return {{"text": "{SECRET}"}}\n')
    return out


def link(path: Path, target: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def escape(kind: str, folder: Path, cases: int = 8) -> Path:
    """The fault project with one way out of it (ESCAPES names the kinds): the project's root."""
    out = outside(folder)
    files: dict[str, str] = {}
    if kind in ("instructions", "instructions_root"):
        name = "../../outside/secret.txt" if kind == "instructions" else "@root/../outside/secret.txt"
        files["agents/bot.yaml"] = AGENT + f'instructions: "{name}"\n'
    elif kind in ("fragment", "include"):
        name = "fragments/tone" if kind == "fragment" else "../outside/secret"
        files[PROMPT] = f'Rate it. {{% include "{name}" %}} {{{{ text }}}}\n{{{{ output_format }}}}\n'
    elif kind == "media":
        files.update(MEDIA)
    root = make(folder, cases=cases, files=files)
    if kind == "fragment":
        link(root / "fragments" / "tone.md", out / "secret.md")
    elif kind == "prompt":
        link(root / PROMPT, out / "secret.md")
    elif kind == "experiment_prompt":
        link(root / "experiments/rate_ok/prompts/terse.md", out / "secret.md")
    elif kind == "code":
        link(root / "flows/rate/nodes/clean/clean.py", out / "evil.py")
    elif kind == "dataset":
        data = root / "datasets" / "reviews.yaml"
        (out / "reviews.yaml").write_text(data.read_text().replace('text: "fine"', f'text: "{SECRET}"'))
        link(data, out / "reviews.yaml")
    elif kind == "findings":
        (out / "findings").mkdir()
        link(root / "experiments/rate_ok/findings", out / "findings")
    elif kind == "media":
        data = root / "datasets" / "reviews.yaml"
        data.write_text(data.read_text().replace(
            '    text: "fine"\n', '    text: "fine"\n    photo: {"$media": "image/png", "file": "@root/../outside/secret.txt"}\n'))
    return root


def kill_worker_mid_series(cwd: Path, root: Path, gate: int, *args: str) -> None:
    """Run the command (with -n 2), kill -9 one xdist worker once `gate` calls were made (they wait for `go`,
    so it dies with calls in flight), let the rest finish."""
    proc = start(cwd, *args)
    wait_until(lambda: len(calls(root)) >= gate, proc, what=f"{gate} calls")
    kill(min(pids(root)))
    (root / "go").touch()
    proc.communicate(timeout=300)


def kill_mid_series(cwd: Path, root: Path, gate: int, *args: str) -> None:
    """Run the command, kill -9 it once `gate` calls were made and an attempt is committed; then `go`."""
    proc = start(cwd, *args)
    wait_until(lambda: len(calls(root)) >= gate and finished(root) > 0, proc, what="a finish")
    kill(proc.pid)
    proc.wait()
    (root / "go").touch()
