"""Whole-process timings of commands run in turn (A B A B ...), with the ratio pair by pair: these machines
are shared and noisy, so figures are medians and a comparison is a ratio measured in the same run.

Used by the bench_*.py scripts; each run's wall time, CPU time (user + system, from the kernel's
accounting of the finished process and its children) and peak RSS.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

PYTHON = sys.executable


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mb: float
    returncode: int


def run_once(cmd: list[str], cwd=None, env=None) -> Run:
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode not in (0, 1):   # pytest: 1 = some test failed, which a bench may mean
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    # ru_maxrss of wait4 is the process's own peak (KiB on Linux); children of pytest -n are separate
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def private_temproot(folder) -> dict[str, str]:
    """The environment with pytest's temporary root in `folder` (the bench's own temporary folder): pytest's
    end-of-session removal of other runs' old numbered folders from the shared root took from nothing to a
    minute here, and is no part of what a bench measures."""
    return {**os.environ, "PYTEST_DEBUG_TEMPROOT": str(folder)}


def compare(commands: dict[str, list[str]], rounds: int = 5, warmup: int = 1, cwd=None, env=None,
            quiet: bool = False) -> dict[str, list[Run]]:
    """Every command once per round, in turn; `warmup` rounds first, not counted. With `cwd` (the bench's
    temporary folder) and no `env`, pytest's temporary root is that folder (private_temproot)."""
    if cwd is not None and env is None:
        env = private_temproot(cwd)
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for r in range(warmup + rounds):
        for name, cmd in commands.items():
            run = run_once(cmd, cwd=cwd, env=env)
            if r >= warmup:
                runs[name].append(run)
        if not quiet:
            print(f"  round {r + 1 - warmup}/{rounds}" if r >= warmup else "  warm-up", file=sys.stderr)
    return runs


def median(runs: list[Run], field: str) -> float:
    return statistics.median(getattr(r, field) for r in runs)


def ratio(a: list[Run], b: list[Run], field: str = "wall") -> tuple[float, float, float]:
    """(min, median, max) of the pairwise ratios a[i] / b[i]."""
    pairs = sorted(getattr(x, field) / getattr(y, field) for x, y in zip(a, b))
    return pairs[0], statistics.median(pairs), pairs[-1]


def report(runs: dict[str, list[Run]], against: str | None = None) -> None:
    """A row per command: median wall, CPU and peak RSS; with `against`, the ratios to that command."""
    for name, rs in runs.items():
        line = (f"{name:<34} wall {median(rs, 'wall'):7.2f} s   cpu {median(rs, 'cpu'):7.2f} s   "
                f"rss {median(rs, 'rss_mb'):6.0f} MB")
        if against and name != against:
            lo, mid, hi = ratio(rs, runs[against], "wall")
            clo, cmid, chi = ratio(rs, runs[against], "cpu")
            line += (f"   wall x{mid:.2f} ({lo:.2f}-{hi:.2f})   cpu x{cmid:.2f} ({clo:.2f}-{chi:.2f})"
                     f"   rss {median(rs, 'rss_mb') - median(runs[against], 'rss_mb'):+.0f} MB")
        print(line)


def pytest_cmd(*args: str) -> list[str]:
    return [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
