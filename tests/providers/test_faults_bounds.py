"""Size bounds (the answer's limit after decompression is tested with the HTTP client, in
tests/providers/test_http_client.py): a stored text beyond its limit is cut with a marker and its sha256; a call whose
input alone would pass the attempt's hard limit at the model's known price is refused before it is sent."""
from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from http.server import ThreadingHTTPServer

import pytest

from pytest_aqven.experiments.split import split_of
from pytest_aqven.providers import secrets
from pytest_aqven.providers.base import Message, ModelRequest, ProviderError
from pytest_aqven.providers.openai_compat import OpenAICompatProvider
from pytest_aqven.series.scheduler import Budget, BudgetGuard

from .. import faults, projects
from ..faults import Usage
from .test_openai_compat import request


def test_a_long_text_is_stored_cut_with_its_length_and_sha256():
    text = "x" * 100_000 + "end"
    out = secrets.scrub_data({"trace": {"output": {"reason": text}}, "n": 3}, 1000)
    stored = out["trace"]["output"]["reason"]
    digest = hashlib.sha256(text.encode()).hexdigest()
    assert stored == "x" * 1000 + f"...[truncated: 100,003 characters in all, sha256 {digest}]" and out["n"] == 3


BIG_ANSWER_INFERENCE = projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"].rstrip(" ") + \
    '        - name: "reason"\n          type: "Text"\n'


def test_a_long_answer_is_scored_whole_and_stored_cut(tmp_path, xdist):
    """A 2 MB answer (bench/fault_sweep.py tries 20 MB): the checks read all of it, the database keeps 64 Ki."""
    root = faults.make(tmp_path, cases=8, answer='{"label": "positive", "reason": "' + "y" * (2 << 20) + '"}',
                       files={"flows/rate/nodes/judge/judge.inference.yaml": BIG_ANSWER_INFERENCE})
    result = faults.run(tmp_path, *xdist)
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


@pytest.mark.slow
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
