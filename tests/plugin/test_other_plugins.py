"""The example project with the plugins teams run beside pytest-aqven: pytest-sugar, pytest-timeout,
pytest-randomly, pytest-rerunfailures, pytest-cov. They are not test extras (pytest-randomly reorders every
test it sees once installed): .ci/run installs them in a venv of their own and runs this file there."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .. import projects
from ..conftest import XDIST

EXAMPLE = Path(__file__).parents[2] / "example_project"


@pytest.fixture
def example(pytester):
    shutil.copytree(EXAMPLE, pytester.path / "example_project")
    return pytester


def run(pytester, *args):
    return pytester.runpytest_subprocess("example_project", "-p", "no:cacheprovider", *args, timeout=300)


def verdict_lines(result) -> list[str]:
    return [l for l in result.outlines if l.startswith(("small_agent_accuracy (", "small_replaces_large ("))]


def test_pytest_sugar_reports_every_verdict_within_the_collected_count(example, xdist):
    pytest.importorskip("pytest_sugar")
    result = run(example, "--force-sugar", "--aqven-holdout", *xdist)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED          # the held-out inconclusive verdict
    assert [l.split(" - ")[0] for l in verdict_lines(result)] == [
        "small_agent_accuracy (holdout, 100/100 attempts): confirmed",
        "small_replaces_large (holdout, 260/260 attempts): inconclusive"]
    # sugar's counts: every collected item once (360 held-out attempts and the two verdicts), no more
    result.stdout.fnmatch_lines(["Results (*", "*352 passed", "*1 failed", "*9 xfailed"])


SLOW = '''
import asyncio
from pytest_aqven import ModelResponse


async def complete(request):
    if "slow" in request.messages[-1].content:
        await asyncio.sleep(3)
    return ModelResponse(text='{"label": "positive"}', cost_usd=0.0001)
'''


def test_pytest_timeout_leaves_attempts_to_their_own_time_limits(pytester, xdist):
    """A slow call ends as the infrastructure error `timeout` at the engine's limit (limits.seconds), a skipped
    attempt, never a FAILED one with pytest-timeout's traceback; the series still gets its verdict."""
    pytest.importorskip("pytest_timeout")
    root = projects.make(pytester, projects.cases(10) + projects.cases(4, "slow", prefix="slow"), repeats=1,
                         files={"provider.py": SLOW}, package="timeoutproj")
    aqven = root / "aqven.yaml"
    aqven.write_text(aqven.read_text() + "limits:\n  seconds: 0.5\n")
    result = pytester.runpytest_subprocess("proj", "--timeout", "1", "-rs", "-p", "no:cacheprovider", *xdist,
                                           timeout=120)
    out = result.stdout.str()
    assert "Timeout" not in out and "Traceback" not in out
    assert result.parseoutcomes().get("failed", 0) == 1          # the verdict: invalid, too many infra errors
    result.stdout.fnmatch_lines(["rate_ok (dev, *): invalid - No finding: 2 of 6 attempts hit infrastructure errors "
                                 "(2 of 6 cases had none measured).",
                                 "SKIPPED [[]2[]] *: timeout: node judge: the model call did not return within 0.5 s"])


def test_pytest_randomly_changes_the_order_not_the_verdicts(example):
    pytest.importorskip("pytest_randomly")
    shuffled = run(example, "-p", "randomly", "--randomly-seed=7", *XDIST["n2"])
    plain = run(example, "-p", "no:randomly", "--aqven-new-series")
    assert verdict_lines(shuffled) == verdict_lines(plain) and len(verdict_lines(plain)) == 2
    assert shuffled.ret == plain.ret == pytest.ExitCode.OK


def test_pytest_rerunfailures_reruns_no_attempt_and_no_verdict(example, xdist):
    pytest.importorskip("pytest_rerunfailures")
    result = run(example, "--reruns", "2", "--aqven-holdout", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1 and "rerun" not in outcomes          # a verdict is never rerun
    assert outcomes["passed"] + outcomes["xfailed"] + outcomes["failed"] == 362     # each item once


def test_pytest_cov_measures_the_projects_code_and_changes_nothing_else(example, xdist):
    pytest.importorskip("pytest_cov")
    result = run(example, "--cov=example_project", "--cov-report=term", *xdist)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*coverage: *", "*sim.py*", "*275 passed, 47 xfailed*"])
    assert len(verdict_lines(result)) == 2
