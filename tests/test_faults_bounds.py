"""Size bounds: an answer is limited after decompression (a gzip bomb stops at the limit, on both HTTP paths,
and is never retried); a stored text beyond its limit is cut with a marker and its sha256; a call whose
input alone would pass the attempt's hard limit at the model's known price is refused before it is sent."""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import zlib
from http.server import ThreadingHTTPServer

import pytest

from pytest_aqven.experiments.split import split_of
from pytest_aqven.providers import secrets
from pytest_aqven.providers.base import Message, ModelRequest, ProviderError
from pytest_aqven.providers.http11 import AnswerTooLarge, Origin, inflate
from pytest_aqven.providers.openai_compat import OpenAICompatProvider, RetryPolicy, _HttpxClient
from pytest_aqven.series.scheduler import Budget, BudgetGuard

from . import faults, projects
from .faults import Usage
from .providers.test_http11 import RawServer, answer, run
from .providers.test_openai_compat import request

INFLATED = 64 << 20          # what the bomb inflates to; the client's limit in these tests is 1 MiB


def bomb(wbits: int = 31) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    return b"".join([compressor.compress(b" " * (1 << 20)) for _ in range(INFLATED >> 20)] + [compressor.flush()])


@pytest.mark.parametrize("encoding,wbits", [("gzip", 31), ("deflate", 15), ("deflate", -15)])
def test_a_compression_bomb_stops_at_the_limit(encoding, wbits):
    body = bomb(wbits)
    assert len(body) < 200_000
    with pytest.raises(AnswerTooLarge, match="inflates past 1,048,576 bytes"):
        inflate(body, encoding, 1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    assert inflate(compressor.compress(b'{"ok": 1}') + compressor.flush(), encoding, 10) == b'{"ok": 1}'
    with pytest.raises(AnswerTooLarge, match="more than 10"):
        inflate(b"x" * 11, "identity", 10)


def test_a_bomb_on_the_lean_client_is_refused_at_the_limit():
    body = bomb()

    async def go():
        async with RawServer(lambda n: answer(body, "Content-Encoding: gzip")) as srv:
            origin = Origin(srv.url, {}, size=1, max_answer=1 << 20)
            with pytest.raises(AnswerTooLarge):
                await origin.post(None, b"{}", timeout=10, connect_timeout=5)
            big = Origin(srv.url, {}, size=1, max_answer=INFLATED)       # under a larger limit it reads whole
            return len((await big.post(None, b"{}", timeout=30, connect_timeout=5)).content)
    assert run(go()) == INFLATED


def test_a_bomb_through_httpx_is_refused_at_the_limit():
    body = bomb()

    async def go():
        async with RawServer(lambda n: answer(body, "Content-Encoding: gzip")) as srv:
            client = _HttpxClient(srv.url, {}, 10.0, 1, max_answer=1 << 20)
            try:
                with pytest.raises(AnswerTooLarge):
                    await client.post(None, b"{}", timeout=10, connect_timeout=5)
            finally:
                await client.aclose()
    run(go())


def test_a_too_large_answer_is_an_infrastructure_error_never_retried():
    body = bomb()

    async def go():
        async with RawServer(lambda n: answer(body, "Content-Encoding: gzip")) as srv:
            provider = OpenAICompatProvider(provider_id="local", base_url=srv.url.removesuffix("/chat/completions"),
                                            api_key=None, catalog=None, retry=RetryPolicy(base_s=0.01),
                                            max_answer=1 << 20)
            with pytest.raises(ProviderError) as err:
                await provider.complete(request())
            await provider.aclose()
            return err.value, len(srv.requests)
    error, requests = run(go())
    assert error.code == "answer_too_large" and "max_answer_mb" in str(error) and requests == 1


def test_a_long_text_is_stored_cut_with_its_length_and_sha256():
    text = "x" * 100_000 + "end"
    out = secrets.scrub_data({"trace": {"output": {"reason": text}}, "n": 3}, 1000)
    stored = out["trace"]["output"]["reason"]
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert stored == "x" * 1000 + f"...[truncated: 100,003 characters in all, sha256 {digest}]" and out["n"] == 3


BIG_ANSWER_INFERENCE = projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"].rstrip(" ") + \
    '        - name: "reason"\n          type: "Text"\n'


@pytest.mark.parametrize("n", ["0", "2"])
def test_a_long_answer_is_scored_whole_and_stored_cut(tmp_path, n):
    """A 2 MB answer (bench/fault_sweep.py tries 20 MB): the checks read all of it, the database keeps 64 Ki."""
    root = faults.make(tmp_path, cases=8, answer='{"label": "positive", "reason": "' + "y" * (2 << 20) + '"}',
                       files={"flows/rate/nodes/judge/judge.inference.yaml": BIG_ANSWER_INFERENCE})
    result = faults.run(tmp_path, "-n", n)
    assert result.returncode == 0, result.stdout
    rows = [json.loads(r[0]) for r in faults.query(root, "SELECT record FROM aqven_series_attempts")]
    assert rows and all(r["passed"] for r in rows)
    for row in rows:
        assert len(json.dumps(row)) < 300_000
        (judge,) = [node for node in row["trace"]["nodes"] if node["node"] == "judge"]
        assert judge["output"]["reason"].startswith("y" * 1000) and "[truncated: 2,097,152 characters" in \
            judge["output"]["reason"]


def test_a_call_whose_input_alone_passes_the_limit_is_refused_before_it_is_sent():
    provider = OpenAICompatProvider(provider_id="openai", base_url="http://127.0.0.1:9/v1", api_key=None,
                                    catalog="openai")
    small = request("gpt-4o")
    big = ModelRequest("gpt-4o", (Message("user", "word " * (2 << 20)),))   # 10 MB: at least 1.3 M tokens
    assert asyncio.run(provider.input_cost(small, 0.5)) == 0.0       # no price looked up for a small call
    cost = asyncio.run(provider.input_cost(big, 0.5))
    assert cost is not None and cost > 2.0

    class Never:
        async def complete(self, request):
            raise AssertionError("sent")
        input_cost = provider.input_cost

    with pytest.raises(ProviderError) as err:
        asyncio.run(BudgetGuard(Never(), Budget(1.0)).complete(big))
    assert err.value.code == "budget_exceeded" and "refused before it was sent" in str(err.value)


def test_a_25_mb_input_under_a_one_dollar_cap_sends_nothing(tmp_path):
    Usage.requests = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Usage)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        names = [f"case_{i:02d}" for i in range(12)]
        first_dev = next(n for n in names if split_of(faults.PACKAGE, "reviews", n) == "dev")
        root = faults.make(tmp_path, cases=12, files=projects.dataset(
            [(n, "word " * (5 << 20) if n == first_dev else "short") for n in names]))
        faults.on_catalog_server(root, f"http://127.0.0.1:{httpd.server_address[1]}/v1")
        result = faults.run(tmp_path, "-rs", env={"OPENAI_API_KEY": "sk-test-0123456789"})
    finally:
        httpd.shutdown()
    records = [json.loads(r[0]) for r in faults.query(root, "SELECT record FROM aqven_series_attempts")]
    cut = [r for r in records if r["outcome"] == "budget_cut"]
    assert "budget_exceeded" in result.stdout, result.stdout
    assert len(cut) == 1 and Usage.requests == len(records) - 1      # the big case's call was never sent
    spent = faults.query(root, "SELECT SUM(spend_usd) FROM aqven_spend")[0][0]
    assert spent < 0.05
