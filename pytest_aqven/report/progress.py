"""Progress of long runs: attempts done of total, spend of cap and time left, every --aqven-progress
seconds, written only where pytest's own progress output has just finished a line (so its dots and
percentages stay intact, with xdist too)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .text import usd

if TYPE_CHECKING:
    from ..record import AttemptRecord
    from .terminal import Terminal


class Progress:
    def __init__(self, every: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every                 # seconds between lines; 0: never
        self.clock = clock
        self.total = 0
        self.caps: dict[str, float] = {}   # experiment file -> its series' spend cap
        self.done = 0
        self.spent = 0.0
        self.unpriced = 0
        self.started: float | None = None
        self.last: float | None = None

    def planned(self, attempts: int, caps: dict[str, float]) -> None:
        self.total = max(self.total, attempts)
        self.caps.update(caps)

    def attempt(self, record: AttemptRecord) -> None:
        """`record`: a pytest_aqven.record.AttemptRecord."""
        now = self.clock()
        if self.started is None:
            self.started = self.last = now
        self.done += 1
        if not record.reused:
            self.spent += (record.cost_usd or 0.0) + (record.check_cost_usd or 0.0)
            self.unpriced += record.unpriced_calls or 0

    def due(self) -> bool:
        return (self.every > 0 and self.last is not None and 0 < self.done < self.total
                and self.clock() - self.last >= self.every)

    def line(self) -> str:
        spent = ("at least " if self.unpriced else "") + usd(self.spent)
        cap = f" of {usd(sum(self.caps.values()))} cap" if self.caps else ""
        text = f"aqven: {self.done}/{self.total} attempts, {spent}{cap} spent"
        elapsed = self.clock() - (self.started or self.clock())
        if self.done and elapsed > 0:
            left = elapsed / self.done * (self.total - self.done)
            text += f", about {_duration(left)} left"
        return text

    def write(self, tr: Terminal) -> None:
        """At a line boundary only: after pytest ended a line of dots (`[ 42%]` and a newline), or after a
        verbose line (which pytest ends when it writes the next one)."""
        if not self.due():
            return
        verbose = tr.config.get_verbosity() > 0
        if not verbose and tr._tw.width_of_current_line != 0:
            return                                      # mid-line: wait for pytest to end it
        if verbose:
            tr.ensure_newline()
        tr._tw.write(self.line(), cyan=True)
        if verbose:
            tr.currentfspath = -2                       # pytest starts its next line with a newline
        else:
            tr._tw.line()
        self.last = self.clock()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
