"""Prices a project declares ([tool.aqven.prices] in pyproject.toml) for models no catalog knows, and the
warning before the first attempt when a series' calls cannot be priced."""
from __future__ import annotations

import asyncio
import json
import sqlite3
import textwrap

import pytest
import yaml

from pytest_aqven.api.check import check_root
from pytest_aqven.providers.base import ModelRequest, ModelResponse
from pytest_aqven.providers.prices import Price, PricedProvider, ProjectPrices, load, pyproject_of

from .test_plugin_http import make, split_cases, verdict_of

PRICES = '''
[project]
name = "team-evals"

[tool.aqven.prices]
"local:m1" = { input = 0.5, output = 1.5 }     # USD per million tokens
'''


def test_prices_are_read_from_the_nearest_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PRICES)
    root = tmp_path / "evals"
    root.mkdir()
    assert pyproject_of(root) == tmp_path / "pyproject.toml"
    declared = load(root)
    assert declared.prices == {"local:m1": Price(0.5, 1.5)} and declared.problems == () and declared.declared
    assert declared.price("local", "m1").cost(1_000_000, 2_000_000) == pytest.approx(3.5)
    (root / "pyproject.toml").write_text('[project]\nname = "evals"\n')       # the nearest one decides
    assert load(root).prices == {} and not load(root).declared


@pytest.mark.parametrize("line, message", [
    ('"local:m1" = { input = -1, output = 2 }', '"local:m1": input must be a number of USD at 0 or above, not -1'),
    ('"local:m1" = { input = 1 }', '"local:m1": a price is { input = <USD>, output = <USD> }'),
    ('"local:m1" = { input = 1, output = 2, cached = 0.1 }', '"local:m1": a price is { input = <USD>'),
    ('"local:m1" = { input = 1, output = "cheap" }', "output must be a number of USD at 0 or above, not 'cheap'"),
    ('"m1" = { input = 1, output = 2 }', '"m1": a key is "<provider>:<model>", as an agent names its model'),
])
def test_a_price_that_does_not_fit_is_an_error_at_its_line(pytester, server, line, message):
    root = make(pytester, server, split_cases(2))
    (root / "pyproject.toml").write_text(f"# prices\n[tool.aqven.prices]\n{line}\n")
    found = [d for d in check_root(root) if d.code == "E_PRICES_INVALID"]
    assert len(found) == 1 and (found[0].file, found[0].line, found[0].column) == ("pyproject.toml", 3, 1)
    assert message in found[0].message
    (root / "pyproject.toml").write_text("[tool.aqven.prices\n")
    [syntax] = [d for d in check_root(root) if d.code == "E_PRICES_INVALID"]
    assert "is not TOML" in syntax.message and syntax.line == 1


def test_a_declared_price_prices_only_what_nothing_else_priced():
    class Inner:
        def __init__(self, response):
            self.response = response

        async def complete(self, request):
            return self.response

        def resolve_mode(self, model):
            return "native"

    declared = ProjectPrices(None, {"lab:m": Price(1.0, 2.0)})
    request = ModelRequest(model="m", messages=())
    tokens = ModelResponse(text="{}", tokens_in=1000, tokens_out=500)
    priced = asyncio.run(PricedProvider("lab", Inner(tokens), declared).complete(request))
    assert (priced.cost_usd, priced.cost_source) == (pytest.approx(0.002), "project")
    reported = ModelResponse(text="{}", tokens_in=1000, tokens_out=500, cost_usd=0.5, cost_source="provider")
    kept = asyncio.run(PricedProvider("lab", Inner(reported), declared).complete(request))
    assert (kept.cost_usd, kept.cost_source) == (0.5, "provider")
    failed = ModelResponse(finish_reason="error", error="no")
    assert asyncio.run(PricedProvider("lab", Inner(failed), declared).complete(request)).cost_usd is None
    assert PricedProvider("lab", Inner(tokens), declared).resolve_mode("m") == "native"


def calls(root) -> list[dict]:
    db = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    try:
        rows = [json.loads(r[0]) for r in db.execute("SELECT record FROM aqven_series_attempts")]
    finally:
        db.close()
    return [c for r in rows for n in r["trace"]["nodes"] for c in n["calls"]]


@pytest.mark.slow
def test_a_server_that_reports_tokens_only_is_warned_before_the_first_attempt(pytester, server, xdist):
    """vLLM and Ollama report tokens, not costs: without a declared price the header says so before any
    attempt, with and without xdist, and the spend is a lower bound."""
    root = make(pytester, server, split_cases(3))
    server.with_cost = False
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", *xdist)
    out = result.stdout.str()
    warning = ("aqven: agents/bot.yaml:4:1: warning W_PRICE_UNKNOWN model: agent bot: the calls of local:m1 have no "
               "known price: provider local is an openai_compatible endpoint, which no price list covers, and "
               "[tool.aqven.prices] does not name it; unless the server reports each call's cost, a series that "
               "calls it spends at least what it shows, and the spend cap ($1.00) counts only priced calls, so it "
               "cannot stop that series")
    assert warning in result.outlines
    assert result.outlines.index(warning) < next(i for i, l in enumerate(result.outlines) if "passed" in l or
                                                 l.startswith(("collected", "created:")))
    assert ('aqven:   hint: price it under [tool.aqven.prices] in pyproject.toml: "local:m1" = { input = <USD per '
            'million input tokens>, output = <USD per million output tokens> }') in result.outlines
    assert "spent at least $0.0000 (3 attempts on a model without a known price)" in out
    assert {c["cost_source"] for c in calls(root)} == {"unknown"}


@pytest.mark.slow
def test_a_declared_price_prices_a_server_that_reports_tokens_only(pytester, server):
    root = make(pytester, server, split_cases(3))
    server.with_cost = False
    (root / "pyproject.toml").write_text(textwrap.dedent(PRICES))
    assert [d for d in check_root(root) if d.severity == "warning" or d.code.startswith("E_PRICES")] == []
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider")
    assert "W_PRICE_UNKNOWN" not in result.stdout.str()
    each = (12 * 0.5 + 5 * 1.5) / 1_000_000            # the server reports 12 tokens in, 5 out
    assert {(c["cost_source"], round(c["cost_usd"], 12)) for c in calls(root)} == {("project", round(each, 12))}
    assert "spent $0.0000 of its $1.00 cap" in result.stdout.str() and "at least" not in result.stdout.str()
    db = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    try:
        [series] = [json.loads(r[0]) for r in db.execute("SELECT record FROM aqven_series")]
    finally:
        db.close()
    # an input of the series: a price edited while it runs changes what it measured (inputs_changed)
    assert str((root / "pyproject.toml").resolve()) in series["fingerprints"]



def test_a_function_provider_that_reports_tokens_only_takes_the_declared_price(pytester):
    """The project `aqven new` writes: its simulator reports tokens, its pyproject.toml the prices."""
    from pytest_aqven.scaffold import create
    create(pytester.path / "demo", "demo")
    result = pytester.runpytest("demo", "-p", "no:cacheprovider", "-k", "small_reads_reviews")
    assert "at least" not in result.stdout.str()
    priced = calls(pytester.path / "demo")
    small = (0.15, 0.60)            # "sim:small-1" of the project's pyproject.toml, USD per million tokens
    assert priced and all(c["cost_source"] == "project" and c["cost_usd"] == pytest.approx(
        (c["tokens_in"] * small[0] + c["tokens_out"] * small[1]) / 1e6) for c in priced), priced[0]


@pytest.mark.slow
def test_max_tokens_and_a_declared_price_bound_what_an_attempt_can_cost(pytester, server, xdist):
    """Every call's bound is its input as sent and the agent's max_tokens of output at the model's price: the
    series' cost_usd is then a bounded mean, "cheaper than" is confirmed, and the finding records the bound.
    Without max_tokens no bound is known and the same series is not decided on its upper bound."""
    cases = [(name, "fine " * (i % 7)) for i, (name, _) in enumerate(split_cases(40, "holdout"))]
    root = make(pytester, server, cases)
    server.with_cost = False
    server.prompt_tokens = lambda body: 10 + len(body["messages"][-1]["content"]) // 5
    (root / "pyproject.toml").write_text(textwrap.dedent(PRICES))
    experiment = root / "experiments/rate_ok/experiment.yaml"
    experiment.write_text(experiment.read_text().replace(
        'metric: "label"\n  above: 0.5', 'metric: "cost_usd"\n  below: 0.0002'))
    agent = root / "agents/bot.yaml"
    agent.write_text(agent.read_text().replace("seed: 7}", "seed: 7, max_tokens: 40}"))
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-holdout", *xdist)
    line = verdict_of(result.stdout.str())
    assert "confirmed" in line and "no per-attempt cost bound" not in line, result.stdout.str()
    priced = calls(root)
    assert all(c["cost_bound_usd"] == pytest.approx((c["tokens_in"] * 0.5 + 40 * 1.5) / 1e6) for c in priced)
    [finding] = (root / "experiments/rate_ok/findings").glob("*.yaml")
    assert yaml.safe_load(finding.read_text())["method"]["cost_bound"] == pytest.approx(
        max(c["cost_bound_usd"] for c in priced))

    agent.write_text(agent.read_text().replace(", max_tokens: 40}", "}"))
    for path in (root / ".aqven").glob("aqven.sqlite*"):
        path.unlink()
    finding.unlink()
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-holdout", *xdist)
    line = verdict_of(result.stdout.str())
    assert "inconclusive" in line and "no per-attempt cost bound is known" in line, result.stdout.str()
