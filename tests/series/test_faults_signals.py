"""Signals a CI sends: SIGTERM stops a run as a first Ctrl-C does, with one line saying what stopped and that
the same command continues; a second Ctrl-C never ends in a traceback; a stopped run cancels nothing, so its
recorded attempts are reused and no attempt is paid twice."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from pytest_aqven.series import interrupts

from .. import faults

CONTINUE = "Run the same command to continue: it reuses every recorded attempt and runs only the rest."


def stopped_with(tmp_path, signals: list[int], *args: str):
    """Run the fault project, send `signals` (0.3 s apart: closer ones may reach Python as one) once 6 calls wait in flight, then let them answer:
    (root, the stopped run's output, its exit code)."""
    root = faults.make(tmp_path, cases=24, gate=6, sleep=0.01)
    proc = faults.start(tmp_path, *args)
    faults.wait_until(lambda: len(faults.calls(root)) >= 6, proc, what="calls in flight")
    for n, sig in enumerate(signals):
        if n:
            time.sleep(0.3)
        proc.send_signal(sig)
    time.sleep(0.3)
    (root / "go").touch()
    out = proc.communicate(timeout=300)[0]
    return root, out, proc.returncode


def resumed_paying_each_attempt_once(tmp_path, root, *args: str) -> None:
    again = faults.run(tmp_path, *args)
    assert again.returncode == 0, again.stdout
    paid = faults.calls(root)
    assert len(paid) == len(set(paid)) == faults.attempts_planned(root, "dev"), paid
    assert [s["status"] for s in faults.series(root)] == ["done"]


@pytest.mark.parametrize("concurrency", ["1", "2"])
@pytest.mark.slow
def test_sigterm_stops_like_a_first_ctrl_c_says_so_and_the_same_command_continues(tmp_path, xdist, concurrency):
    args = (*xdist, "--aqven-concurrency", concurrency)
    root, out, code = stopped_with(tmp_path, [signal.SIGTERM], *args)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert ("pytest-aqven: stopped by SIGTERM: no new attempt started; the attempts already running finished and "
            f"were recorded. {CONTINUE}") in out
    assert "Traceback" not in out
    (series,) = faults.series(root)
    assert series["status"] == "running"            # nothing cancelled: what was paid is kept
    assert sorted(faults.calls(root)) == sorted(set(faults.calls(root)))
    resumed_paying_each_attempt_once(tmp_path, root, *args)


@pytest.mark.parametrize("concurrency", ["1", "2"])
@pytest.mark.slow
def test_a_second_ctrl_c_stops_at_once_without_a_traceback(tmp_path, xdist, concurrency):
    args = (*xdist, "--aqven-concurrency", concurrency)
    root, out, code = stopped_with(tmp_path, [signal.SIGINT, signal.SIGINT], *args)
    assert code == pytest.ExitCode.INTERRUPTED, out
    assert "Traceback" not in out and "Task exception" not in out, out
    assert f"pytest-aqven: stopped by Ctrl-C: no new attempt started; the attempts still running were abandoned. " \
           f"{CONTINUE}" in out
    assert faults.series(root)[0]["status"] == "running"
    again = faults.run(tmp_path, *args)
    assert again.returncode == 0 and faults.series(root)[0]["status"] == "done", again.stdout
    assert len(set(faults.calls(root))) == faults.attempts_planned(root, "dev")


def test_a_first_signal_waits_for_the_attempt_a_second_abandons_it_and_one_after_raises_nothing():
    assert threading.current_thread() is threading.main_thread()
    said: list[str] = []
    interrupts.install(said.append)
    held = interrupts.current()
    try:
        assert held.installed
        with pytest.raises(KeyboardInterrupt):
            with held.attempt():
                os.kill(os.getpid(), signal.SIGTERM)
                finished_attempt = True         # reached: the first signal is held
        assert finished_attempt and interrupts.stopped_by() == "SIGTERM" and not interrupts.hurried()
        os.kill(os.getpid(), signal.SIGINT)     # after KeyboardInterrupt was raised: nothing raised, waits end
        assert interrupts.hurried() and said == [
            "pytest-aqven: Ctrl-C again: stopping now; the attempts still running are abandoned (what they paid "
            "is not recorded, the same command runs them again)"]

        interrupts.install(said.append)
        held = interrupts.current()
        reached = False
        with pytest.raises(KeyboardInterrupt):
            with held.attempt():
                os.kill(os.getpid(), signal.SIGINT)
                os.kill(os.getpid(), signal.SIGINT)
                reached = True                  # never: the second one is raised at once
        assert not reached and interrupts.hurried() and interrupts.stopped_by() == "Ctrl-C"

        interrupts.install(said.append)
        with pytest.raises(KeyboardInterrupt):  # between attempts: at once, as Python's own handler
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
    finally:
        interrupts.uninstall()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


EXITS = {
    "exit": ("import os\ndef clean(text: str) -> dict:\n    os._exit(3)\n",
             "os._exit(3) was called: it would end pytest and every attempt with it"),
    "fork": ("import os\ndef clean(text: str) -> dict:\n    if os.fork() == 0:\n        while True:\n"
             "            pass\n    return {'text': text}\n",
             "os.fork() was called: the copy would run pytest on and hold the project database"),
}


@pytest.mark.parametrize("kind", EXITS)
@pytest.mark.slow
def test_a_code_node_that_exits_or_forks_is_its_attempts_error_not_the_end_of_pytest(tmp_path, xdist, kind):
    code, said = EXITS[kind]
    root = faults.make(tmp_path, cases=8, files={"flows/rate/nodes/clean/clean.py": code})
    result = faults.run(tmp_path, *xdist, "-v", timeout=120)
    out = result.stdout + result.stderr
    assert said in out, out
    assert "verdict" in out and result.returncode in (0, 1), out      # the session ran to its end and reported
    assert [s["status"] for s in faults.series(root)] in (["done"], ["failed"])
    alive = [p for p in faults.pids(root)]
    assert alive == []                                               # no call was made: the flow stops first
