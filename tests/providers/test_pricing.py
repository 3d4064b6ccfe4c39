"""The price chain: provider report, OpenRouter's price list (cached on disk), genai-prices, unknown."""
from __future__ import annotations

import dataclasses
import json
import time

import pytest

from pytest_aqven.providers import pricing, registry

from .test_openai_compat import call, request, spec


def openrouter(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-test-123456")
    return registry.build(spec(id="openrouter", base_url=server.url, params={"retry_base_s": 0.01}),
                          package="p", root=tmp_path)


def test_the_providers_own_cost_comes_first(server, tmp_path, monkeypatch):
    server.prices = {"m1": {"prompt": "0.001", "completion": "0.002"}}
    response = call(openrouter(server, tmp_path, monkeypatch), request())
    assert (response.cost_usd, response.cost_source) == (server.cost, "provider")


def test_without_a_reported_cost_the_price_list_prices_it_and_is_cached_on_disk(server, tmp_path, monkeypatch):
    server.with_cost = False
    server.prices = {"m1": {"prompt": "0.001", "completion": "0.002", "request": "0.01"}}
    p = openrouter(server, tmp_path, monkeypatch)
    response = call(p, request())
    assert response.cost_source == "openrouter"
    assert response.cost_usd == pytest.approx(12 * 0.001 + 5 * 0.002 + 0.01)
    cache = tmp_path / ".aqven" / "cache" / "openrouter-models.json"
    assert json.loads(cache.read_text())["data"][0]["id"] == "m1"
    call(p, request())
    again = openrouter(server, tmp_path, monkeypatch)        # a new process reads the cache: no fetch
    assert call(again, request()).cost_source == "openrouter"
    assert server.price_requests == 1


def test_an_unreachable_price_list_never_fails_the_call_and_a_stale_cache_still_prices(server, tmp_path, monkeypatch):
    server.with_cost = False
    server.prices_down = True
    response = call(openrouter(server, tmp_path, monkeypatch), request())
    assert response.outcome == "ok" and (response.cost_usd, response.cost_source) == (None, "unknown")
    cache = tmp_path / ".aqven" / "cache" / "openrouter-models.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"fetched_at": time.time() - 7 * 3600,
                                 "data": [{"id": "m1", "pricing": {"prompt": "0.5", "completion": "0"}}]}))
    response = call(openrouter(server, tmp_path, monkeypatch), request())
    assert (response.cost_usd, response.cost_source) == (6.0, "openrouter")


def test_genai_prices_then_unknown_never_zero(server, tmp_path, monkeypatch):
    server.with_cost = False
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-1")
    p = registry.build(spec(id="openai", base_url=server.url), package="p", root=tmp_path)
    priced = call(p, request("gpt-4o"))
    assert priced.cost_source == "genai_prices" and priced.cost_usd == pytest.approx(12 * 2.5e-6 + 5 * 10e-6)
    unknown = call(p, request("a-model-nobody-prices"))
    assert unknown.cost_usd is None and unknown.cost_source == "unknown"
    local = registry.build(spec(id="mine", kind="openai_compatible", base_url=server.url), package="p", root=tmp_path)
    assert call(local, request("gpt-4o")).cost_usd is None       # an unknown endpoint: no vendor's list price


def test_retries_never_double_count_cost(server, tmp_path, monkeypatch):
    server.script("m1", "500", "429:0", "drop")
    response = call(openrouter(server, tmp_path, monkeypatch), request())
    assert len(response.retries) == 3 and response.cost_usd == server.cost
    assert (response.tokens_in, response.tokens_out) == (12, 5)


def test_dynamic_routers_have_no_price():
    plist = pricing.PriceList("http://127.0.0.1:9/none", cache_file=None)
    plist._prices, plist._loaded_at = pricing._parse([{"id": "openrouter/auto",
                                                       "pricing": {"prompt": "-1", "completion": "-1"}}]), time.time()
    assert plist.cost("openrouter/auto", 10, 10) is None


def test_only_the_subjects_unpriced_calls_make_an_attempts_cost_unknown():
    from pytest_aqven.record import AttemptRecord
    from pytest_aqven.series.to_stats import to_attempt
    base = {"series_id": "s", "experiment": "e", "split": "dev", "started_at": 1.0, "finished_at": 2.0,
            "variant": "v", "case": "c", "repeat": 1, "outcome": "ok", "passed": True, "checks": {},
            "latency_ms": 5.0, "schema_valid_first_try": True, "cost_usd": 0.01}
    assert to_attempt(AttemptRecord.from_wire({**base, "unpriced_calls": 1, "cost_known": True})).cost_usd == 0.01   # a judge's call
    assert to_attempt(AttemptRecord.from_wire({**base, "unpriced_calls": 1, "cost_known": False})).cost_usd is None
    assert to_attempt(AttemptRecord.from_wire({**base, "unpriced_calls": 2})).cost_usd is None                       # an older record
    assert to_attempt(AttemptRecord.from_wire({**base, "unpriced_calls": 0})).cost_usd == 0.01


def test_a_calls_cost_bound_is_its_input_and_max_tokens_at_the_listed_price(server, tmp_path, monkeypatch):
    """With max_tokens the call records the most it could have cost, at the price list's prices even when the
    provider reports the cost itself; without max_tokens, or without a price, no bound."""
    server.prices = {"m1": {"prompt": "0.001", "completion": "0.002", "request": "0.01"}}
    p = openrouter(server, tmp_path, monkeypatch)
    bounded = dataclasses.replace(request(), settings={"temperature": 0, "max_tokens": 50})
    response = call(p, bounded)
    assert response.cost_source == "provider" and response.cost_bound_usd == pytest.approx(12 * 0.001 + 50 * 0.002
                                                                                           + 0.01)
    assert call(p, request()).cost_bound_usd is None
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-1")
    genai = registry.build(spec(id="openai", base_url=server.url), package="p", root=tmp_path)
    listed = dataclasses.replace(request("gpt-4o"), settings={"max_tokens": 50})
    assert call(genai, listed).cost_bound_usd == pytest.approx(12 * 2.5e-6 + 50 * 10e-6)
    unknown = dataclasses.replace(request("a-model-nobody-prices"), settings={"max_tokens": 50})
    assert call(genai, unknown).cost_bound_usd is None
