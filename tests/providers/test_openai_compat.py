"""The chat-completions provider against a real HTTP server on 127.0.0.1: every fault path."""
from __future__ import annotations

import asyncio
import base64
import json

import pytest
from pydantic import ValidationError

from pytest_aqven.project.specs import ProviderSpec
from pytest_aqven.providers import registry
from pytest_aqven.providers.base import OUTPUT_TOOL, Message, ModelRequest, Part, ProviderError, ToolCall, ToolDef
from pytest_aqven.providers.openai_compat import OpenAICompatProvider, RetryPolicy

FAST = RetryPolicy(retries=3, base_s=0.01, cap_s=0.05, total_s=5.0)
SCHEMA = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}


def provider(server, *, catalog=None, retry=FAST, timeout_s=2.0, key="sk-test-000000", price_list=None):
    return OpenAICompatProvider(provider_id="local", base_url=server.url, api_key=key, catalog=catalog,
                                timeout_s=timeout_s, retry=retry, price_list=price_list)


def request(model="m1", mode="prompted", **kw):
    return ModelRequest(model, (Message("system", "Rate it."), Message("user", "fine")), {"temperature": 0},
                        SCHEMA, mode, **kw)


def call(p, req):
    return asyncio.run(p.complete(req))


def test_an_answer_with_its_usage_cost_and_the_request_sent(server):
    response = call(provider(server), request(seed=None) if False else request())
    assert response.outcome == "ok" and json.loads(response.text) == {"label": "positive"}
    assert (response.tokens_in, response.tokens_out) == (12, 5)
    assert (response.cost_usd, response.cost_source) == (server.cost, "provider")
    assert response.retries == () and response.latency_ms > 0
    sent = server.requests[0]
    assert sent["authorization"] == "Bearer sk-test-000000"
    assert sent["body"]["model"] == "m1" and sent["body"]["temperature"] == 0
    assert sent["body"]["messages"] == [{"role": "system", "content": "Rate it."}, {"role": "user", "content": "fine"}]
    assert "response_format" not in sent["body"] and "tools" not in sent["body"]


def test_native_mode_asks_for_the_json_schema_response_format(server):
    call(provider(server), request(mode="native", strict=False))
    fmt = server.requests[0]["body"]["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA, "strict": False}}


def test_tool_mode_answers_through_the_output_tool(server):
    server.script("m1", "tool")
    out = ToolDef(OUTPUT_TOOL, "the answer", SCHEMA)
    response = call(provider(server), request(mode="tool", tools=(out,)))
    body = server.requests[0]["body"]
    assert body["tool_choice"] == "required"
    assert body["tools"][0]["function"] == {"name": OUTPUT_TOOL, "description": "the answer",
                                            "parameters": SCHEMA, "strict": True}
    assert response.parsed == {"label": "positive"} and response.outcome == "ok" and response.tool_calls == ()


def test_a_tool_call_comes_back_as_tool_calls(server):
    server.script("m1", "tool")
    lookup = ToolDef("lookup_order", "find an order", {"type": "object", "properties": {}})
    response = call(provider(server), request(tools=(lookup,)))
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (ToolCall("call_1", "lookup_order", {"label": "positive"}),)


def test_tool_results_and_media_parts_are_sent_as_the_protocol_says(server):
    png = b"\x89PNG fake"
    messages = (Message("user", (Part("text", text="What is this?"), Part("image", media_type="image/png", data=png),
                                 Part("document", media_type="application/pdf", data=b"%PDF", name="a.pdf"),
                                 Part("audio", media_type="audio/mpeg", data=b"ID3"))),
                Message("assistant", "", tool_calls=(ToolCall("c1", "lookup_order", {"id": 7}),)),
                Message("tool", '{"status": "sent"}', tool_call_id="c1"))
    call(provider(server), ModelRequest("m1", messages))
    sent = server.requests[0]["body"]["messages"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
        {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERg=="}},
        {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}}]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"id": 7}'}}]}
    assert sent[2] == {"role": "tool", "content": '{"status": "sent"}', "tool_call_id": "c1"}


@pytest.mark.parametrize("fault, outcome", [("length", "truncated"), ("refusal", "refusal"),
                                            ("content_filter", "refusal"), ("malformed", "error")])
def test_finish_reasons_and_refusals_map_to_outcomes(server, fault, outcome):
    server.script("m1", fault)
    response = call(provider(server), request())
    assert response.outcome == outcome
    if fault == "refusal":
        assert response.refusal == "I can't help with that."
    assert response.retries == ()


@pytest.mark.parametrize("fault, cause", [("429", "rate_limited"), ("500", "http_500"), ("503", "http_503"),
                                          ("drop", "connection"), ("timeout", "timeout")])
def test_transient_faults_are_retried_and_recorded(server, fault, cause):
    server.hang_s = 1.0
    server.script("m1", fault, fault)
    response = call(provider(server, timeout_s=0.3), request())
    assert response.outcome == "ok"
    assert [c for c, _ in response.retries] == [cause, cause]
    assert len(server.requests) == 3


def test_retry_after_is_honoured(server):
    server.script("m1", "429:0.4")
    started = asyncio.run(_timed(provider(server), request()))
    response, elapsed = started
    assert response.retries == (("rate_limited", 0.4),) and elapsed >= 0.4


async def _timed(p, req):
    loop = asyncio.get_running_loop()
    t = loop.time()
    response = await p.complete(req)
    return response, loop.time() - t


def test_client_errors_are_never_retried_and_the_key_never_shows(server):
    server.script("m1", "400")
    with pytest.raises(ProviderError) as info:
        call(provider(server, key="sk-canary-4242424242"), request())
    assert info.value.code == "provider_error" and info.value.retries == ()
    assert "HTTP 400" in str(info.value) and "sk-canary-4242424242" not in str(info.value)
    assert len(server.requests) == 1


def test_retries_stop_at_their_budget_with_the_cause_as_code(server):
    server.script("m1", *["500"] * 10)
    with pytest.raises(ProviderError) as info:
        call(provider(server), request())
    assert info.value.code == "provider_error" and len(info.value.retries) == FAST.retries
    assert len(server.requests) == FAST.retries + 1
    server.script("m2", "429:30")        # a Retry-After past the total budget: give up at once
    with pytest.raises(ProviderError) as info:
        call(provider(server), request("m2"))
    assert info.value.code == "rate_limited" and "retry budget" in str(info.value)


def test_aqvens_on_rate_limit_keys_fail_at_once_or_wait_a_fixed_time(server, tmp_path):
    """on_rate_limit: fail gives up at the first 429; fixed waits retry_wait_seconds, retry_attempts times
    (Retry-After ignored); other faults keep the usual retries. The keys build from aqven.yaml's provider."""
    from pytest_aqven.providers import openai_compat

    def built(**keys):
        spec = ProviderSpec.model_validate({"id": "local", "kind": "openai_compatible", "base_url": server.url,
                                            "data_policy": {"allows_pii": False, "allows_sensitive": False,
                                                            "retention": "zero"}, **keys})
        return openai_compat.build(spec, None, root=tmp_path, api_key="sk-test-000000")

    server.script("m1", "429", "429")
    with pytest.raises(ProviderError) as info:
        call(built(on_rate_limit="fail"), request())
    assert info.value.code == "rate_limited" and info.value.retries == () and len(server.requests) == 1
    assert "on_rate_limit: fail" in str(info.value)

    server.script("m2", "429:30", "500", "429")
    response, elapsed = asyncio.run(_timed(built(on_rate_limit="fixed", retry_wait_seconds=0.05), request("m2")))
    assert response.outcome == "ok" and elapsed < 5
    assert [(c, w) for c, w in response.retries if c == "rate_limited"] == [("rate_limited", 0.05)] * 2
    server.script("m3", *["429"] * 5)
    with pytest.raises(ProviderError) as info:
        call(built(on_rate_limit="fixed", retry_wait_seconds=0.01, retry_attempts=2), request("m3"))
    assert info.value.code == "rate_limited" and len(info.value.retries) == 2
    assert built().retry.on_rate_limit == "auto"
    with pytest.raises(ValidationError):
        ProviderSpec.model_validate({"id": "x", "kind": "code", "run": "m:f", "on_rate_limit": "sometimes",
                                     "data_policy": {"allows_pii": False, "allows_sensitive": False,
                                                     "retention": "zero"}})


def test_one_pooled_client_per_event_loop_shared_by_concurrent_calls(server):
    p = provider(server)

    async def many():
        responses = await asyncio.gather(*(p.complete(request()) for _ in range(8)))
        return responses, len(p._clients)
    responses, clients = asyncio.run(many())
    assert all(r.outcome == "ok" for r in responses) and clients == 1


def spec(**kw) -> ProviderSpec:
    return ProviderSpec.model_validate({"data_policy": {"allows_pii": False, "allows_sensitive": False,
                                                        "retention": "zero"}, **kw})


def test_a_missing_key_names_its_variable_before_any_request(server, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    with pytest.raises(ProviderError) as info:
        registry.build(spec(id="openrouter", base_url=server.url), package="p", root=tmp_path)
    assert info.value.code == "provider_key_missing" and "OPENROUTER_API_KEY" in str(info.value)
    with pytest.raises(ProviderError) as info:
        registry.build(spec(id="mine", kind="openai_compatible", base_url=server.url, api_key="ref:env/MY_KEY"),
                       package="p", root=tmp_path)
    assert info.value.code == "provider_key_missing" and "MY_KEY" in str(info.value)
    assert server.requests == []


def test_keys_come_from_dotenv_and_the_environment_wins(server, tmp_path, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    (tmp_path / ".env").write_text("# keys\nexport MY_KEY='sk-from-dotenv-1'\n")
    s = spec(id="mine", kind="openai_compatible", base_url=server.url, api_key="ref:env/MY_KEY")
    call(registry.build(s, package="p", root=tmp_path), request())
    monkeypatch.setenv("MY_KEY", "sk-from-environ-2")
    registry.forget()                   # keys are read when a process first builds the provider
    call(registry.build(s, package="p", root=tmp_path), request())
    assert [r["authorization"] for r in server.requests] == ["Bearer sk-from-dotenv-1", "Bearer sk-from-environ-2"]


def test_catalog_prefixes_default_base_urls_and_local_ones_need_no_key(tmp_path, monkeypatch):
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    p = registry.build(spec(id="ollama"), package="p", root=tmp_path)
    assert p.url == "http://localhost:11434/v1/chat/completions" and "Authorization" not in p._headers
    monkeypatch.setenv("GROQ_API_KEY", "gsk-123456789")
    assert registry.build(spec(id="groq"), package="p", root=tmp_path).url == \
        "https://api.groq.com/openai/v1/chat/completions"
    for bad in ("nosuchprefix", "bedrock"):
        with pytest.raises(ProviderError) as info:
            registry.build(spec(id=bad), package="p", root=tmp_path)
        assert info.value.code == "MODEL_FEATURE_UNSUPPORTED"


def test_retry_after_as_seconds_or_an_http_date():
    import time
    from email.utils import formatdate

    from pytest_aqven.providers.openai_compat import _retry_after
    assert _retry_after("2") == 2.0 and _retry_after("-1") == 0.0 and _retry_after(None) is None
    assert 8 <= _retry_after(formatdate(time.time() + 10, usegmt=True)) <= 10
    assert _retry_after("soon") is None


def test_experiments_of_a_process_share_one_http_provider(server, tmp_path):
    s = spec(id="mine", kind="openai_compatible", base_url=server.url)
    assert registry.build(s, package="p", root=tmp_path) is registry.build(s, package="p", root=tmp_path)
