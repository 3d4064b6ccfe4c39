"""Record/replay: per-attempt cassettes, replay misses are cassette_miss, no secrets recorded."""
from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from pytest_aqven.providers import registry
from pytest_aqven.providers.base import AttemptIdentity, ProviderError

from .test_openai_compat import request, spec

CANARY = "sk-canary-cassette-77777777"


def build(server, root, mode, monkeypatch, key=CANARY):
    monkeypatch.setenv("CASSETTE_TEST_KEY", key)
    registry.forget()          # a fresh process
    return registry.build(spec(id="mine", kind="openai_compatible", base_url=server.url,
                               api_key="ref:env/CASSETTE_TEST_KEY", params={"retry_base_s": 0.01}),
                          package="p", root=root, cassettes=mode)


def identity(repeat):
    return AttemptIdentity("exp", "var", "case_1", repeat)


def run(p, *reqs):
    async def go():
        out = []
        for r in reqs:
            try:
                out.append(await p.complete(r))
            except ProviderError as exc:
                out.append(exc)
        return out
    return asyncio.run(go())


def test_each_repeat_and_each_call_keeps_its_own_recording_and_replay_calls_nothing(server, tmp_path, monkeypatch):
    answers = iter(range(100))
    server.responder = lambda body: {"label": f"answer {next(answers)}"}
    reqs = [request(attempt=identity(1)), request(attempt=identity(1)), request(attempt=identity(2))]
    recorded = run(build(server, tmp_path, "record", monkeypatch), *reqs)
    assert [r.text for r in recorded] == [json.dumps({"label": f"answer {i}"}) for i in range(3)]
    files = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "cassettes").rglob("*.json"))
    assert files == ["cassettes/exp/var/case_1/1.json", "cassettes/exp/var/case_1/2.json"]
    sent = len(server.requests)
    replayed = run(build(server, tmp_path, "replay", monkeypatch, key=""), *reqs)
    assert replayed == recorded and len(server.requests) == sent


def test_a_replay_miss_is_cassette_miss_never_a_live_call(server, tmp_path, monkeypatch):
    run(build(server, tmp_path, "record", monkeypatch), request(attempt=identity(1)))
    sent = len(server.requests)
    p = build(server, tmp_path, "replay", monkeypatch)
    other = replace(request(attempt=identity(1)), model="m2")
    miss, third_repeat = run(p, other, request(attempt=identity(3)))
    assert miss.code == "cassette_miss" and third_repeat.code == "cassette_miss"
    assert "cassettes/exp/var/case_1/3.json" in str(third_repeat)
    assert len(server.requests) == sent


def test_record_missing_calls_only_for_what_is_missing(server, tmp_path, monkeypatch):
    run(build(server, tmp_path, "record", monkeypatch), request(attempt=identity(1)))
    sent = len(server.requests)
    run(build(server, tmp_path, "record_missing", monkeypatch), request(attempt=identity(1)), request(attempt=identity(2)))
    assert len(server.requests) == sent + 1
    assert (tmp_path / "cassettes/exp/var/case_1/2.json").is_file()


def test_replay_needs_no_key_but_recording_does(server, tmp_path, monkeypatch):
    monkeypatch.delenv("CASSETTE_TEST_KEY", raising=False)
    registry.forget()
    s = spec(id="mine", kind="openai_compatible", base_url=server.url, api_key="ref:env/CASSETTE_TEST_KEY")
    with pytest.raises(ProviderError, match="CASSETTE_TEST_KEY"):
        registry.build(s, package="p", root=tmp_path, cassettes="record")
    p = registry.build(s, package="p", root=tmp_path, cassettes="replay")
    assert run(p, request(attempt=identity(1)))[0].code == "cassette_miss"
    p = registry.build(s, package="p", root=tmp_path, cassettes="record_missing")
    assert run(p, request(attempt=identity(1)))[0].code == "provider_key_missing"


def test_errors_are_recorded_and_replayed_without_the_key(server, tmp_path, monkeypatch):
    server.script("m1", "400")
    recorded = run(build(server, tmp_path, "record", monkeypatch), request(attempt=identity(1)))[0]
    assert recorded.code == "provider_error"
    replayed = run(build(server, tmp_path, "replay", monkeypatch), request(attempt=identity(1)))[0]
    assert (replayed.code, str(replayed)) == (recorded.code, str(recorded))
    text = (tmp_path / "cassettes/exp/var/case_1/1.json").read_text()
    assert "HTTP 400" in text and CANARY not in text and "Authorization" in text
