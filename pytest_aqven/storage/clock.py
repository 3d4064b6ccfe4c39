"""The steady clock of one machine, by which the SQLite backend judges heartbeats, claims and leases."""
from __future__ import annotations

import functools
import os
import tempfile
import time
from pathlib import Path


def _boot() -> tuple[str, float]:
    """(this boot's id, the epoch time of this boot as the first process of it to ask saw it), kept in a file of
    the temporary folder named by the boot id, so every process of this machine's boot shares one anchor."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "", time.time() - time.monotonic()       # no boot id: one anchor per process
    anchor = Path(tempfile.gettempdir()) / f"aqven-clock-{boot_id}"
    for _ in range(100):
        try:
            return boot_id, float(anchor.read_text())
        except (OSError, ValueError):
            pass
        try:                # written whole, then linked: a reader never sees half of it; the first link wins
            fd, temp = tempfile.mkstemp(dir=anchor.parent, prefix=".aqven-clock-")
            with os.fdopen(fd, "w") as f:
                f.write(repr(time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)))
            try:
                os.link(temp, anchor)
            except FileExistsError:
                pass
            finally:
                os.unlink(temp)
        except OSError:
            break
    return boot_id, time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


@functools.lru_cache(maxsize=1)
def _anchor() -> float:
    return _boot()[1]


def steady_now() -> float:
    """Epoch seconds by a clock no step of the wall clock moves (NTP, a manual set): the machine's time since
    boot (CLOCK_BOOTTIME: it counts a suspend, as a lease must) from one anchor per boot. Every runner of an
    SQLite database is on this machine, so heartbeats and claims judged by it are never taken from a live
    runner because the clock stepped; its times stay within a step of the wall clock for display."""
    return _anchor() + time.clock_gettime(time.CLOCK_BOOTTIME)
