"""A project for fault injection and what to measure after a fault: provider calls against attempts, ledger
rows, series, findings. Used by tests/test_faults*.py and bench/fault_sweep.py (the before/after table).

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


def make(folder: Path, *, cases: int = 24, experiments: tuple[str, ...] = ("rate_ok",), repeats: int = 1,
         gate: int = 0, sleep: float = 0.0, cost: float = 0.001, answer: str = '{"label": "positive"}',
         extra: str = "", files: dict | None = None, plan_cases: int | None = None) -> Path:
    """The test project of tests/projects.py with the counting provider; `cases` cases (about half held out)."""
    root = folder / "proj"
    exps: dict[str, str] = {}
    for name in experiments:
        exps.update(projects.experiment(name, repeats=repeats, cases=plan_cases))
    projects.write(root, {"provider.py": PROVIDER.format(gate=gate, sleep=sleep, secret=SECRET, answer=answer,
                                                         cost=cost, extra=extra),
                          **projects.dataset(projects.cases(cases)), **exps, **(files or {})}, package=PACKAGE)
    return root


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
    row = ledger.store._conn.execute(
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
    import select
    proc, master, out = prompted
    os.write(master, answer.encode() + b"\n")
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
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    return proc.returncode, out.decode(errors="replace")
