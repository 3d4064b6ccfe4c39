"""A configuration that cannot work stops its series before it spends (docs/series.md): no key, a refused key
(HTTP 401/403), an unknown model or route (404), a connection refused. The series stops at its first such
error in every process, ends invalid with no finding, and the same command after the fix continues it: the
attempts that failed that way and paid nothing run again. Against the local chat-completions server."""
from __future__ import annotations

import asyncio
import re

import pytest

from pytest_aqven.providers.base import ProviderError
from pytest_aqven.providers.openai_compat import OpenAICompatProvider, RetryPolicy

from .. import faults
from .openai_server import Server
from .test_openai_compat import request
from .test_plugin_http import make, records, split_cases, verdict_line

LINE = re.compile(r"SKIPPED \[(\d+)\] proj/experiments/rate_ok/experiment\.yaml:\d+: series \S+ stopped at a "
                  r"permanent error, nothing more is spent: provider local, model m1: (.*)\. Fix: (.*); then run "
                  r"the same command: it continues the series \(provider_unusable\)")


def failure(server, *, key_names=("LOCAL_LLM_KEY",)) -> ProviderError:
    p = OpenAICompatProvider(provider_id="local", base_url=server.url, api_key="sk-test-000000", catalog=None,
                             retry=RetryPolicy(retries=2, base_s=0.01, cap_s=0.02), key_names=key_names)
    with pytest.raises(ProviderError) as raised:
        asyncio.run(p.complete(request()))
    return raised.value


@pytest.mark.parametrize("status", ["401", "403"])
def test_a_refused_key_is_permanent_and_names_its_variable(server, status):
    server.broken["m1"] = status
    assert failure(server).fix == "the server refused the key: set a valid key in LOCAL_LLM_KEY"
    assert failure(server, key_names=()).fix == "the server refused the key: set a valid key in the provider " \
                                                "api_key (ref:env/NAME)"
    assert len(server.requests) == 2            # never retried


def test_an_unknown_model_is_permanent_and_other_failures_are_not(server):
    server.broken["m1"] = "404"
    error = failure(server)
    assert (error.code, error.public) == ("provider_error", "local: HTTP 404")
    assert error.fix == (f"the server at {server.url} has no model m1 or no such route: correct the agent's model, "
                         f"or the provider's base_url")
    for fault in ("400", "500", "429", "drop"):
        server.broken["m1"] = fault
        assert failure(server).fix is None, fault


def test_a_refused_connection_is_permanent_only_when_every_try_was_refused(server):
    down = Server().start()
    down.stop()
    error = failure(down)
    assert error.fix == f"nothing accepts connections at {down.url}: start the server, or correct the provider's " \
                        f"base_url"
    assert [cause for cause, _ in error.retries] == ["connection", "connection"]
    server.script("m1", "drop", "drop", "drop")     # dropped, not refused: a passing fault
    assert failure(server).fix is None


def run(pytester, *args):
    return pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "-rs", *args)


def stopped(result, attempts: int) -> tuple[str, str]:
    """The run skipped every attempt with one line and failed its verdict invalid, counting no failure."""
    out = result.stdout.str()
    lines = [m for m in (LINE.search(line) for line in out.splitlines()) if m]
    assert len(lines) == 1 and int(lines[0].group(1)) == attempts, out
    result.assert_outcomes(skipped=attempts, failed=1)
    assert "verdict invalid: series " in out and "xfail" not in out
    return lines[0].group(2), lines[0].group(3)


def no_finding(root) -> None:
    assert not (root / "experiments" / "rate_ok" / "findings").exists()
    assert not (root / "FINDINGS.md").exists()


@pytest.mark.parametrize("status", ["401", "404"])
@pytest.mark.slow
def test_a_refused_key_or_unknown_model_stops_the_series_at_its_first_call(pytester, server, xdist, status):
    root = make(pytester, server, split_cases(6), repeats=2)
    server.broken["m1"] = status
    error, fix = stopped(run(pytester, *xdist), 12)
    assert error == f"HTTP {status}"
    assert fix == ("the server refused the key: set a valid key in LOCAL_LLM_KEY" if status != "404" else
                   f"the server at {server.url} has no model m1 or no such route: correct the agent's model, "
                   f"or the provider's base_url")
    # the first attempt of a series runs alone: one call, whatever the processes
    assert len(server.requests) == 1
    assert records(root) == []          # the failed attempt paid nothing: not recorded, it runs after the fix
    no_finding(root)
    del server.broken["m1"]             # the fix: the same command continues the series and decides it
    result = run(pytester, *xdist)
    assert "signal - Signal on dev" in verdict_line(result)
    assert len(server.requests) == 1 + 12 and len(records(root)) == 12
    assert len({r["series_id"] for r in records(root)}) == 1


@pytest.mark.slow
def test_a_missing_key_stops_the_series_before_any_request(pytester, server, xdist, monkeypatch):
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    root = make(pytester, server, split_cases(6), repeats=2)
    (root / ".env").unlink()
    result = run(pytester, *xdist)
    error, fix = stopped(result, 12)
    assert error == "no API key (LOCAL_LLM_KEY is not set)"
    assert fix == f"set LOCAL_LLM_KEY in the environment or in {root / '.env'}"
    assert server.requests == [] and records(root) == []
    series_id = re.search(r"series (\S+) stopped at", result.stdout.str()).group(1)
    refused = faults.aqven(pytester.path, "series", "approve", series_id, "--path", "proj")     # a fix, not a cap
    assert refused.returncode == 2 and f"nothing to approve: series {series_id} stopped at a permanent" in refused.stderr
    # its real state everywhere: stopped, waiting for a fix, not for an approval
    listed = faults.aqven(pytester.path, "series", "list", "--path", "proj").stdout
    assert re.search(rf"{series_id} +rate_ok +dev +stopped ", listed) and "awaiting_approval" not in listed, listed
    shown = faults.aqven(pytester.path, "series", "show", series_id, "--path", "proj").stdout
    assert "status stopped\n" in shown and "awaiting_approval" not in shown, shown
    (root / ".env").write_text("LOCAL_LLM_KEY=sk-test\n")
    assert "signal - Signal on dev" in verdict_line(run(pytester, *xdist))
    assert len(server.requests) == 12


@pytest.mark.slow
def test_a_refused_connection_stops_the_series_and_the_server_started_continues_it(pytester, xdist):
    down = Server().start()
    down.stop()                         # its port now refuses connections
    port = int(down.url.rsplit(":", 1)[1].split("/")[0])
    root = make(pytester, down, split_cases(6), repeats=2)
    error, fix = stopped(run(pytester, *xdist), 12)
    assert error.startswith("ClientConnectorError") or "connect" in error.lower(), error
    assert fix == f"nothing accepts connections at {down.url}: start the server, or correct the provider's base_url"
    assert records(root) == []
    up = Server(port).start()
    try:
        up.responder = down.responder
        assert "signal - Signal on dev" in verdict_line(run(pytester, *xdist))
        assert len(up.requests) == 12
    finally:
        up.stop()


@pytest.mark.slow
def test_held_out_cases_not_reached_stay_unspent(pytester, server, xdist):
    root = make(pytester, server, split_cases(8, "holdout"), repeats=1)
    server.broken["m1"] = "404"
    stopped(run(pytester, "--aqven-holdout", *xdist), 8)
    no_finding(root)
    del server.broken["m1"]
    result = run(pytester, "--aqven-holdout", *xdist)
    assert re.search(r"confirmed|refuted|inconclusive", verdict_line(result))
    assert len(records(root)) == 8 and len(server.requests) == 1 + 8
    assert len(list((root / "experiments" / "rate_ok" / "findings").glob("*.yaml"))) == 1


@pytest.mark.slow
def test_attempts_in_flight_finish_and_no_new_one_starts(pytester, server, xdist):
    """The first attempt succeeds (its cost is the reserve), then the model goes away: of the attempts in flight
    at concurrency 4, those that paid nothing run again after the fix; none starts after the stop."""
    root = make(pytester, server, split_cases(12), repeats=2)
    server.script("m1", "ok")
    server.broken["m1"] = "404"
    stopped_at = run(pytester, "--aqven-concurrency", "4", *xdist)
    out = stopped_at.stdout.str()
    assert "verdict invalid: series " in out and "provider_unusable" in out
    assert re.search(r"rate_ok series \S+: 1 attempts ran, 0 reused; spent \S+ of its \$1\.00 cap; status stopped\n", out), out
    calls = len(server.requests)
    assert calls <= 1 + 4 * (2 if xdist else 1)
    assert len(records(root)) == 1          # only the attempt that answered is recorded
    del server.broken["m1"]
    assert "signal - Signal on dev" in verdict_line(run(pytester, "--aqven-concurrency", "4", *xdist))
    assert len(records(root)) == 24 and len(server.requests) == calls + 23


MAP_FLOW = {
    "flows/rate/flow.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Rate each word of a review, then the review"
        input: "Review"
        output: "Rating"
        order:
        - "clean"
        - "each"
        - "judge"
        returns:
        - name: "label"
          from: "$judge.out.label"
        ''',
    "flows/rate/nodes/clean/clean.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Strip the text and cut it into words"
        run: "clean"
        in:
        - name: "text"
          from: "$input.text"
        out:
        - name: "text"
          type: "Text"
        - name: "words"
          type: "Text[]"
        ''',
    "flows/rate/nodes/clean/clean.py": '''
        def clean(text: str) -> dict:
            return {"text": text.strip(), "words": text.split()}
        ''',
    "flows/rate/nodes/each/each.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "map"
        description: "Rate each word"
        over: "$clean.out.words"
        body: "judge_word"
        out:
        - name: "labels"
          type: "Label[]"
          from: "$ok[*].label"
        ''',
    "flows/rate/nodes/each/judge_word.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Rate one word"
        agent: "bot"
        inference: "judge"
        in:
        - name: "text"
          from: "$item"
        ''',
}


@pytest.mark.slow
def test_a_map_whose_items_fail_stops_the_series_too(pytester, server):
    """The default item policy (fail): the map's failure is the attempt's infrastructure error, and the
    permanent error under it stops the series (an absorbing policy, `skip`, needs the attempt to be an
    infrastructure error as well: docs/series.md)."""
    from .. import projects
    root = make(pytester, server, split_cases(4, text="fine words"), repeats=1)
    projects.write_files(root, MAP_FLOW)
    server.broken["m1"] = "404"
    stopped(run(pytester), 4)
    assert len(server.requests) <= 2        # the map's items, two words at most, of the first attempt alone
    del server.broken["m1"]
    assert "signal - Signal on dev" in verdict_line(run(pytester))


FIXABLE = '''
import os
from pytest_aqven import ModelResponse, ProviderError


def complete(request):
    if not os.path.exists(os.path.join(os.path.dirname(__file__), "licensed")):
        raise ProviderError("provider_error", "the model is not licensed here", fix="touch licensed")
    return ModelResponse(text='{"label": "positive"}', cost_usd=0.0001)
'''


@pytest.mark.slow
def test_a_function_provider_marks_its_own_error_permanent(pytester, xdist):
    from .. import projects
    root = projects.make(pytester, 6, files={"provider.py": FIXABLE}, repeats=2)
    result = run(pytester, "--aqven-concurrency", "2", *xdist)
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes.get("passed", 0), outcomes["skipped"] > 0) == (1, 0, True)
    result.stdout.fnmatch_lines(["SKIPPED [[]*[]] *: series * stopped at a permanent error, nothing more is spent: "
                                 "provider fake, model bot-1: function provider raised provider_error at provider.py:*. "
                                 "Fix: touch licensed; then run the same command: it continues the series "
                                 "(provider_unusable)"])
    (root / "licensed").touch()
    result = run(pytester, "--aqven-concurrency", "2", *xdist)
    assert result.ret == 0 and result.parseoutcomes()["passed"] == outcomes["skipped"] + 1


@pytest.mark.slow
def test_an_attempt_that_falls_back_to_a_model_that_answers_stops_nothing(pytester, server):
    from .. import projects
    root = make(pytester, server, split_cases(4), repeats=1)
    projects.write_files(root, {"agents/bot.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "A model with a fallback"
        model: "local:m1"
        fallback_models: ["local:m2"]
        output: {on_error: "fallback"}
        '''})
    server.broken["m1"] = "404"
    assert "signal - Signal on dev" in verdict_line(run(pytester))
    assert [r["model"] for r in server.requests] == ["m1", "m2"] * 4
