"""Ctrl-C and SIGTERM, one way for the whole process: stop taking attempts, finish and record the running
ones, say what the same command continues; never a traceback.

- A first Ctrl-C or SIGTERM (what CI cancellation and `timeout` send) raises KeyboardInterrupt in the main
  thread, so pytest stops its run loop as it does on Ctrl-C. During an attempt run in the main thread
  (concurrency 1) it is held until the attempt ends: its calls are paid, so its record is kept.
- KeyboardInterrupt is raised once: a signal after it (a second Ctrl-C while the run winds down) raises
  nothing, which pytest's own reporting of the first could not survive (a traceback); it makes the wind-down
  stop waiting for the attempts in flight (`hurried`), which are abandoned: their claims go with this process.

Installed from the main thread only, over Python's default handlers (a conftest's own handler is kept).
Imports nothing heavy: the plugin installs it at configure."""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

NAMES: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


def stderr(text: str) -> None:
    try:
        os.write(sys.__stderr__.fileno() if sys.__stderr__ else 2, f"{text}\n".encode())
    except (OSError, ValueError):
        pass


class Interrupts:
    def __init__(self, say: Callable[[str], None] | None = None) -> None:
        self.say = say or stderr
        self.running = False        # an attempt runs in the main thread: a first signal waits for its end
        self.pressed: str | None = None     # the signal that was held, by name
        self.raised: str | None = None      # the signal KeyboardInterrupt was raised for, by name
        self.hurry = False          # a signal came after that one: the wind-down stops waiting
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.previous[signal.SIGINT] = signal.signal(signal.SIGINT, self._handler)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self.previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._handler)

    def uninstall(self) -> None:
        for signum, before in self.previous.items():
            if signal.getsignal(signum) == self._handler:
                signal.signal(signum, before)
        self.previous.clear()

    @property
    def installed(self) -> bool:
        return signal.SIGINT in self.previous

    def _handler(self, signum: int, frame: Any) -> None:
        name = NAMES.get(signum, f"signal {signum}")
        if self.raised is not None:
            if not self.hurry:
                self.hurry = True
                self.say(f"pytest-aqven: {name} again: stopping now; the attempts still running are abandoned "
                         f"(what they paid is not recorded, the same command runs them again)")
            return
        if self.running and self.pressed is None:
            self.pressed = name
            return
        self.hurry = self.pressed is not None       # a second one during the attempt: it is abandoned
        self.raised = self.pressed or name
        raise KeyboardInterrupt

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """An attempt in the main thread: a first signal during it is raised when it ends."""
        self.running = True
        try:
            yield
        finally:
            self.running = False
        if self.pressed is not None and self.raised is None:
            self.raised = self.pressed
            raise KeyboardInterrupt


_current = Interrupts()


def current() -> Interrupts:
    return _current


def install(say: Callable[[str], None] | None = None) -> None:
    """At configure: a fresh state for this session, the handlers set. `say`: a line to the terminal now."""
    global _current
    _current.uninstall()
    _current = Interrupts(say)
    _current.install()


def uninstall() -> None:
    _current.uninstall()


def hurried() -> bool:
    """A second signal came: stop waiting for attempts in flight."""
    return _current.hurry


def stopped_by() -> str:
    """What stopped the run: "SIGTERM", else "Ctrl-C" (pytest's KeyboardInterrupt, however it came)."""
    return _current.raised or "Ctrl-C"
