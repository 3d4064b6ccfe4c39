"""The asyncio engine: user code in worker threads or awaited, time limits, contained SystemExit."""
import asyncio
import time

import pytest

from pytest_aqven.codes import outcome_of
from pytest_aqven.project import usercode

from ..engine_projects import flow, load, node, run, write

CODE = '''
import asyncio
import sys
import time


def shout(text: str) -> dict:
    if text == "hang":
        time.sleep(30)
    if text == "exit":
        sys.exit(3)
    if text == "interrupt":
        raise KeyboardInterrupt
    if text == "bug":
        return helper(text)
    return {"text": text.upper()}


def helper(text):
    raise ValueError(f"cannot shout {text}")


async def whisper(text: str) -> dict:
    await asyncio.sleep(0.01)
    if text == "hang":
        await asyncio.sleep(30)
    if text == "exit":
        raise SystemExit(2)
    return {"text": text.lower()}
'''


@pytest.fixture
def project(tmp_path):
    out = [{"name": "text", "type": "Text"}]
    files = {
        "flows/loud/flow.yaml": flow(["shout", "whisper"], {"text": "$whisper.out.text"}),
        "flows/loud/nodes/shout/shout.node.yaml": node("code", run="shout", in_=[{"name": "text", "from": "$input.text"}],
                                                       out=out, limits={"seconds": 0.3}),
        "flows/loud/nodes/shout/shout.py": CODE,
        "flows/loud/nodes/whisper/whisper.node.yaml": node("code", run="@root.flows.loud.nodes.shout.shout:whisper",
                                                           in_=[{"name": "text", "from": "$input.text"}], out=out,
                                                           limits={"seconds": 0.3}),
    }
    return load(write(tmp_path, files, "asyncproj"))


def test_sync_code_runs_in_a_worker_thread_and_async_code_is_awaited(project):
    result = run(project, "loud", {"text": "Hi"})
    assert result.error is None
    assert [n.output for n in result.nodes] == [{"text": "HI"}, {"text": "hi"}]


def test_a_hang_is_the_infrastructure_error_timeout(project):
    started = time.perf_counter()
    result = run(project, "loud", {"text": "hang"})
    assert time.perf_counter() - started < 5
    assert result.error.code == "timeout" and result.error.node == "shout"
    assert "did not return within 0.3 s" in result.error.message
    assert outcome_of("timeout") == "infra_error"


def test_a_user_system_exit_is_the_attempts_error_not_the_end_of_the_run(project):
    result = run(project, "loud", {"text": "exit"})
    assert result.error.code == "code_invalid"
    assert "SystemExit: 3" in result.error.message and "shout.py:10" in result.error.message


def test_a_user_keyboard_interrupt_in_a_thread_is_contained(project):
    result = run(project, "loud", {"text": "interrupt"})
    assert result.error.code == "code_invalid" and "KeyboardInterrupt" in result.error.message


def test_an_exception_names_the_users_file_and_line_and_only_the_users_frames(project):
    result = run(project, "loud", {"text": "bug"})
    err = result.error
    assert err.location == "shout.py:19"
    assert "ValueError: cannot shout bug at shout.py:19" in err.message
    assert "pytest_aqven" not in err.traceback and "helper" in err.traceback
    assert result.nodes[0].error_location == "shout.py:19"


def test_async_user_code_hang_and_system_exit():
    async def hang():
        await asyncio.sleep(30)

    async def leave():
        raise SystemExit(2)

    async def main():
        with pytest.raises(usercode.UserCallTimeout):
            await usercode.call(hang, timeout=0.05)
        with pytest.raises(usercode.UserCodeError) as info:
            await usercode.call(leave, timeout=1)
        return info.value

    err = asyncio.run(main())
    assert err.exc_type == "SystemExit" and "test_async.py" in err.location


def test_a_real_cancellation_is_not_swallowed():
    async def main():
        task = asyncio.ensure_future(usercode.call(time.sleep, 0.2, timeout=5))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_a_loop_waits_briefly_on_a_thread_only_when_nothing_else_waits():
    """usercode.settled blocks the loop at most QUICK_SECONDS, and only while no other task waits outside it:
    a slow sync call never stalls another task, and its time limit still holds."""
    async def ticker(gaps: list, stop: asyncio.Event):
        last = time.perf_counter()
        while not stop.is_set():
            with usercode.away():          # as a provider call or a database hop of another attempt
                await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def main():
        assert usercode.alone()
        with usercode.away():
            assert usercode.alone()
        gaps: list[float] = []
        stop = asyncio.Event()
        other = asyncio.ensure_future(ticker(gaps, stop))
        await asyncio.sleep(0.02)
        assert not usercode.alone()
        await usercode.call(time.sleep, 1.0, timeout=5)
        stop.set()
        await other
        assert max(gaps) < 0.5, gaps               # the other task kept its pace during the 1 s call
        started = time.perf_counter()
        with pytest.raises(usercode.UserCallTimeout):
            await usercode.call(time.sleep, 4, timeout=0.05)     # alone: the quick wait, then the time limit
        assert time.perf_counter() - started < 2
        assert usercode._away.tasks == {}

    asyncio.run(main())
