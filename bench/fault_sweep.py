"""The fault sweep of issue 21: each fault tried on a small project (tests/faults.py), as an unlucky user or an
attacker would, and what it left behind: provider calls against attempts, ledger rows, held-out series,
findings, and what reached the model or the disk outside the project.

    python bench/fault_sweep.py [--trials N] [--only NAME[,NAME...]] [--code DIR]

Prints one markdown row per fault. `--code DIR` runs the faults on the pytest_aqven of another checkout (an
older commit's, from `git archive`): the before and after table of the issue note. A sweep of every fault takes
several minutes; the test suite asserts the same outcomes (tests/*/test_faults*.py).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import (
    faults,  # noqa: E402
    projects,  # noqa: E402
)

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


def errors(root: Path) -> list[str]:
    return sorted({r[0] or "none" for r in faults.query(
        root, "SELECT json_extract(record, '$.error_code') FROM aqven_series_attempts")})


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


# --- held-out cases spent once -------------------------------------------------------------------

def two_experiments(tmp: Path, **kw) -> tuple[Path, int]:
    root = faults.make(tmp, cases=40, experiments=("rate_a", "rate_b"), **kw)
    return root, faults.attempts_planned(root)


@fault("xdist_kill", "kill -9 of an xdist worker mid-series, then the same command (held-out, 2 experiments)")
def xdist_kill(tmp: Path) -> str:
    root, planned = two_experiments(tmp, gate=12, sleep=0.05)
    args = (*HOLDOUT, "-n", "2", "--aqven-concurrency", "2")
    faults.kill_worker_mid_series(tmp, root, 12, *args)
    again = faults.run(tmp, *args)
    return counts(root, planned) + f"; rerun exit {again.returncode}"


@fault("kill_between_decisions", "kill -9 between two experiments' decisions, then the same command")
def kill_between(tmp: Path) -> str:
    root, planned = two_experiments(tmp, files={"conftest.py": faults.KILL_AT_VERDICT})
    first = faults.run(tmp, *HOLDOUT, env={"FAULT_KILL_AT_VERDICT": "1"})
    again = faults.run(tmp, *HOLDOUT)
    return counts(root, planned) + f"; first exit {first.returncode}, rerun exit {again.returncode}"


@fault("sigstop", "SIGSTOP of a runner past the lease (3 s here), a second runner, then SIGCONT")
def sigstop(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, gate=6, sleep=0.02, files={"conftest.py": faults.SHORT_LEASE})
    planned = faults.attempts_planned(root)
    args = (*HOLDOUT, "--aqven-concurrency", "4")
    first = faults.start(tmp, *args)
    faults.wait_until(lambda: len(faults.calls(root)) >= 6 + 3, first, what="calls in flight")
    first.send_signal(signal.SIGSTOP)
    (root / "go").touch()
    second = faults.run(tmp, *args)
    first.send_signal(signal.SIGCONT)
    out = first.communicate(timeout=300)[0]
    said = "; the resumed runner said its results were discarded" if "discarded" in out else ""
    return counts(root, planned) + f"; exits {first.returncode}/{second.returncode}{said}"


@fault("rerun", "the same held-out command again after it concluded")
def rerun(tmp: Path) -> str:
    root, planned = two_experiments(tmp)
    faults.run(tmp, *HOLDOUT)
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
    return counts(root, planned) + f"; exits {first.returncode}/{again.returncode}"


def clone(root: Path, to: Path) -> Path:
    shutil.copytree(root, to, ignore=shutil.ignore_patterns(".aqven", "calls.log", "__pycache__"))
    return to


@fault("fresh_clone", "a fresh clone: finding files and FINDINGS.md committed, no .aqven/")
def fresh_clone(tmp: Path) -> str:
    root, planned = two_experiments(tmp)
    faults.run(tmp, *HOLDOUT)
    other = tmp / "clone"
    other.mkdir()
    copy = clone(root, other / "proj")
    check = faults.aqven(other, "check", "proj")
    run = faults.run(other, *HOLDOUT)
    return (f"aqven check exit {check.returncode}; held-out run exit {run.returncode}, "
            f"{run.stdout.count('W_FINDINGS_STALE')} W_FINDINGS_STALE, " + counts(copy, planned))


@fault("set_aside_db", "a damaged database set aside, then the held-out command again")
def set_aside(tmp: Path) -> str:
    root, planned = two_experiments(tmp)
    faults.run(tmp, *HOLDOUT)
    faults.database(root).write_bytes(b"not a database" * 100)
    for side in ("-wal", "-shm"):
        Path(str(faults.database(root)) + side).unlink(missing_ok=True)
    faults.run(tmp, *HOLDOUT)          # one message: moved aside
    run = faults.run(tmp, *HOLDOUT)
    return f"exit {run.returncode}, {run.stdout.count('W_FINDINGS_STALE')} W_FINDINGS_STALE, " + counts(root, planned)


# --- hostile YAML --------------------------------------------------------------------------------

@fault("yaml_bomb_notes", "a billion-laughs YAML in a notes/ folder")
def yaml_bomb(tmp: Path) -> str:
    root = faults.make(tmp, cases=8)
    (root / "notes").mkdir()
    (root / "notes" / "bomb.yaml").write_text(faults.LAUGHS)
    status, seconds, _ = timed(faults.pytest_cmd(), tmp, timeout=45, limit_mb=3000)
    check, check_s, _ = timed([sys.executable, "-m", "pytest_aqven.cli", "check", "proj"], tmp, timeout=45)
    return f"pytest {status} after {seconds:.0f} s ({len(faults.calls(root))} calls); aqven check {check} in {check_s:.1f} s"


@fault("yaml_deep_notes", "a 990-deep YAML in a notes/ folder")
def yaml_deep(tmp: Path) -> str:
    root = faults.make(tmp, cases=8)
    (root / "notes").mkdir()
    (root / "notes" / "deep.yaml").write_text(faults.DEEP)
    run = faults.run(tmp)
    return f"pytest exit {run.returncode}, {len(faults.calls(root))} calls, RecursionError x{run.stdout.count('RecursionError')}"


@fault("finding_bomb", "a finding-shaped billion-laughs YAML in findings/ (aqven check, 2.9 GB address space)")
def finding_bomb(tmp: Path) -> str:
    root = faults.make(tmp, cases=8)
    faults.finding_bomb(root)
    status, seconds, _ = timed([sys.executable, "-m", "pytest_aqven.cli", "check", "proj"], tmp, timeout=120,
                               limit_mb=2900)
    said = tail(timed.output, "error") or (timed.output.strip().splitlines() or ["(no output)"])[-1][:120]
    return f"aqven check {status} in {seconds:.0f} s: {said}"


# --- files outside the project -------------------------------------------------------------------

ESCAPES = {"instructions": 'agent instructions: "../../outside/secret.txt"',
           "instructions_root": 'agent instructions: "@root/../outside/secret.txt"',
           "fragment": "a fragment that is a symlink to an outside file",
           "include": '{% include "../outside/secret" %} in a prompt',
           "prompt": "a node's prompt file that is a symlink to an outside file",
           "experiment_prompt": "an experiment's prompt that is a symlink to an outside file",
           "code": "a node's code file that is a symlink to an outside module",
           "dataset": "a dataset that is a symlink to an outside file",
           "findings": "a findings folder that is a symlink outside the project (held-out run)",
           "media": 'a case\'s media file "@root/../outside/secret.txt"'}


def escape_fault(kind: str):
    def run(tmp: Path) -> str:
        root = faults.escape(kind, tmp)
        check = faults.aqven(tmp, "check", "proj")
        codes = sorted({w.rstrip(":") for line in check.stdout.splitlines() for w in line.split() if w.startswith("E_")})
        faults.run(tmp, *HOLDOUT)
        written = len(list((tmp / "outside" / "findings").glob("*.yaml"))) if kind == "findings" else 0
        return (f"aqven check exit {check.returncode} {','.join(codes) or '(silent)'}; the secret reached the model in "
                f"{faults.leaks(root)} of {len(faults.calls(root))} calls; attempt errors {errors(root)}"
                + (f"; finding files written outside the project: {written}" if kind == "findings" else ""))
    return run


for _kind, _title in ESCAPES.items():
    fault(f"escape_{_kind}", _title)(escape_fault(_kind))


# --- providers, secrets, sizes -------------------------------------------------------------------

class Bomb(BaseHTTPRequestHandler):
    """Chat completions answered with a gzip body of 1 MB that inflates to 1 GiB of spaces."""
    protocol_version = "HTTP/1.1"
    body = b""

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def serve(handler) -> ThreadingHTTPServer:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


@fault("gzip_bomb", "a gzip body from the provider that inflates to 1 GiB (one attempt)")
def gzip_bomb(tmp: Path) -> str:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    Bomb.body = b"".join([compressor.compress(b" " * (1 << 20)) for _ in range(1024)] + [compressor.flush()])
    httpd = serve(Bomb)
    try:
        root = faults.make(tmp, cases=8)
        faults.on_catalog_server(root, f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        os.environ["OPENAI_API_KEY"] = "sk-x-0123456789"          # the catalog prefix wants a key
        try:
            status, seconds, rss = timed(faults.pytest_cmd("--aqven-cases", "1"), tmp, timeout=120)
        finally:
            del os.environ["OPENAI_API_KEY"]
    finally:
        httpd.shutdown()
    return f"pytest {status} in {seconds:.0f} s, peak RSS {rss:.0f} MB, attempt errors {errors(root)}"


@fault("env_key_in_exception", "a function provider raising an error that holds keys from the environment and .env")
def env_key(tmp: Path) -> str:
    keys = {"OPENAI_API_KEY": "sk-proj-fault-7c4b1e9d2a6f3081", "SERVICE_TOKEN": "tok-service-9a8b7c6d",
            "DB_PASSWORD_MAIN": "pw-main-5e4d3c2b"}
    root = faults.make(tmp, cases=8, extra=faults.ENV_KEY_LEAK)
    (root / ".env").write_text("UNUSED_BY_THE_PROJECT=dotenv-value-51f0a2c9e4\n")
    run = faults.run(tmp, "--junitxml", "out.xml", "--html", "out.html", env=keys)
    secrets = [*keys.values(), "dotenv-value-51f0a2c9e4"]
    texts = {"database": "\n".join(r[0] for r in faults.query(root, "SELECT record FROM aqven_series_attempts")),
             "junit": (tmp / "out.xml").read_text() if (tmp / "out.xml").exists() else "",
             "html": (tmp / "out.html").read_text() if (tmp / "out.html").exists() else "", "terminal": run.stdout}
    places = [where for where, text in texts.items() if any(key in text for key in secrets)]
    return "a key reached: " + (", ".join(places) or "nothing")


@fault("big_answer", "a 20 MB answer from a function provider (the attempts of 16 cases)")
def big_answer(tmp: Path) -> str:
    inference = projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"].rstrip(" ") + \
        '        - name: "reason"\n          type: "Text"\n'
    root = faults.make(tmp, cases=16, answer='{"label": "positive", "reason": "' + "x" * (20 << 20) + '"}',
                       files={"flows/rate/nodes/judge/judge.inference.yaml": inference})
    status, _, rss = timed(faults.pytest_cmd(), tmp, timeout=300)
    size = sum(len(r[0]) for r in faults.query(root, "SELECT record FROM aqven_series_attempts"))
    return f"pytest {status}, peak RSS {rss:.0f} MB, {size / max(1, faults.finished(root)) / 1e6:.1f} MB stored per attempt"


@fault("big_input", "one 25 MB input under the $1.00 cap, on a model with a known price (gpt-4o)")
def big_input(tmp: Path) -> str:
    faults.Usage.requests = 0
    httpd = serve(faults.Usage)
    try:
        from pytest_aqven.experiments.split import split_of
        dev = [n for n in (f"c{i}" for i in range(20)) if split_of(faults.PACKAGE, "reviews", n) == "dev"][:2]
        root = faults.make(tmp, cases=2, files=projects.dataset([(n, "word " * (5 << 20)) for n in dev]))
        faults.on_catalog_server(root, f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        faults.run(tmp, env={"OPENAI_API_KEY": "sk-x-0123456789"})
    finally:
        httpd.shutdown()
    spent = faults.query(root, "SELECT SUM(spend_usd) FROM aqven_spend") or [(0,)]
    return (f"{faults.Usage.requests} requests sent, ledger ${float(spent[0][0] or 0):.2f} of the $1.00 cap, "
            f"attempt errors {errors(root)}")


# --- write failures, cancel, approve, edits -----------------------------------------------------

@fault("disk_full_finding", "disk full at the finding write (held-out), then the same command with space again")
def disk_full(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, files={"conftest.py": faults.DISK_FULL})
    planned = faults.attempts_planned(root)
    full = faults.run(tmp, *HOLDOUT, env={"FAULT_DISK_FULL": "1"})
    verdict = "verdict line shown" if "rate_ok (holdout" in full.stdout else "no verdict line"
    tmps = len(list(root.rglob("*.tmp")))
    said = tail(full.stdout, "could not") or tail(full.stdout, "Free space")
    again = faults.run(tmp, *HOLDOUT)
    return (f"exit {full.returncode}, {verdict}, {tmps} .tmp files left (\"{said}\"); with space: exit "
            f"{again.returncode}, " + counts(root, planned))


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
    said = tail(run.stdout + run.stderr, "could not") or tail(run.stdout + run.stderr, "cannot write")
    return f"exit {run.returncode}, {len(faults.calls(root))} calls paid first; \"{said}\""


@fault("cancel_at_decision", "aqven series cancel while the last attempt is in flight")
def cancel_at_decision(tmp: Path) -> str:
    root = faults.make(tmp, cases=40)
    planned = faults.attempts_planned(root)
    (root / "provider.py").write_text(faults.PROVIDER.format(gate=planned, sleep=0.0, secret=faults.SECRET,
                                                             answer='{"label": "positive"}', cost=0.001, extra=""))
    proc = faults.start(tmp, *HOLDOUT)
    faults.wait_until(lambda: len(faults.calls(root)) >= planned, proc, what="the last call")
    cancel = faults.aqven(tmp, "series", "cancel", faults.series(root)[0]["series_id"], "--path", "proj")
    (root / "go").touch()
    proc.communicate(timeout=120)
    s = faults.series(root)[0]
    return (f"cancel exit {cancel.returncode}; series {s['status']}, verdict {(s.get('verdict') or {}).get('state')}, "
            f"findings {len(faults.finding_files(root))}; exit {proc.returncode}")


def paused(tmp: Path) -> tuple[Path, str]:
    root = faults.make(tmp, cases=40, cost=0.01)
    (root / "aqven.yaml").write_text((root / "aqven.yaml").read_text() + "research:\n  spend_cap_usd: 0.05\n")
    faults.run(tmp)
    return root, faults.series(root)[0]["series_id"]


@fault("approve_vs_cancel", "aqven series approve while a cancel lands before its confirmation")
def approve_vs_cancel(tmp: Path) -> str:
    root, sid = paused(tmp)
    prompted = faults.approve_prompted(tmp, sid, "0.40")
    faults.aqven(tmp, "series", "cancel", sid, "--path", "proj")
    code, text = faults.confirm(prompted)
    return f"approve exit {code}: \"{tail(text, 'approved')}\"; the database holds {faults.series(root)[0]['status']}"


@fault("approve_vs_approve", "two aqven series approve at once ($0.40 and $0.08)")
def approve_vs_approve(tmp: Path) -> str:
    root, sid = paused(tmp)
    first, second = faults.approve_prompted(tmp, sid, "0.40"), faults.approve_prompted(tmp, sid, "0.08")
    code_a, _ = faults.confirm(first)
    code_b, text_b = faults.confirm(second)
    return (f"first exit {code_a}, second exit {code_b}: \"{tail(text_b, 'approved')}\"; "
            f"the database holds cap ${float(faults.series(root)[0]['cap_usd']):.2f}")


@fault("dataset_edit_after_kill", "a dataset edit between a killed run and its rerun")
def dataset_edit(tmp: Path) -> str:
    root = faults.make(tmp, cases=40, gate=8, sleep=0.02)
    faults.kill_mid_series(tmp, root, 8, "--aqven-concurrency", "2")
    faults.add_cases(root, ["added"])
    run = faults.run(tmp, "--aqven-concurrency", "2")
    said = tail(run.stdout, "closed series")
    return f"series statuses {[s['status'] for s in faults.series(root)]}; " + (f"\"{said}\"" if said else "nothing said")


def prompt_fault(restore: bool):
    def run(tmp: Path) -> str:
        root = faults.make(tmp, cases=40, gate=4, sleep=0.02)
        prompt = root / faults.PROMPT
        keep, changed = tmp / "prompt.keep", tmp / "prompt.changed"
        shutil.copy2(prompt, keep)
        changed.write_text(prompt.read_text().replace("Rate", "Grad"))
        shutil.copystat(keep, changed)
        proc = faults.start(tmp, "-n", "2")
        faults.wait_until(lambda: len(faults.calls(root)) >= 4, proc, what="calls in flight")
        shutil.copy2(changed, prompt)                # cp -p: new content, the old mtime and size
        if restore:
            shutil.copy2(keep, prompt)               # and back, with its old mtime again
        (root / "go").touch()
        return f"verdict: {tail(proc.communicate(timeout=300)[0], 'rate_ok (dev') or 'none'}"
    return run


fault("prompt_cp_p", "a prompt changed mid-series with its old mtime (cp -p), under -n 2")(prompt_fault(False))
fault("prompt_cp_p_restored", "a prompt changed mid-series, then restored with its old mtime (cp -p)")(prompt_fault(True))


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
        distinct = list(dict.fromkeys(outcomes))
        shown = distinct[0] if len(distinct) == 1 else " / ".join(f"{outcomes.count(o)}x {o}" for o in distinct)
        print(f"| {title} | {args.trials} | {shown} |", flush=True)


if __name__ == "__main__":
    main()
