"""Series against the local chat-completions server through pytest: traces, shared rate limits under
xdist, record and offline replay, and a canary key that no output of the run may contain."""
from __future__ import annotations

import json
import re
import sqlite3

import pytest

from .. import projects
from ..conftest import XDIST

PACKAGE = "httpproj"
CANARY = "sk-canary-5f0e8d2c1b7a4e39"


def aqven_yaml(url: str, limits: str = "", params: str = "") -> str:
    return f'''
        apiVersion: "aqven/v1"
        kind: "Project"
        description: "A project on an OpenAI-compatible server"
        package: "{{package}}"
        providers:
        - id: "local"
          kind: "openai_compatible"
          base_url: "{url}"
          api_key: "ref:env/LOCAL_LLM_KEY"
          params: {{retry_base_s: 0.01, timeout_s: 5{params}}}
          data_policy:
            allows_pii: false
            allows_sensitive: false
            retention: "zero"
        {limits}
        '''


LEAKY_CLEAN = '''
import os


def clean(text: str) -> dict:
    if "leak" in text:
        raise RuntimeError("could not reach the store with key " + os.environ.get("LOCAL_LLM_KEY", "?"))
    return {"text": text.strip()}
'''


def labeller(body: dict) -> dict:
    text = body["messages"][-1]["content"]
    return {"label": "negative" if "wrong" in text else "positive"}


def make(pytester, server, case_list, **kw):
    return make_files(pytester.path / "proj", server, case_list, **kw)


def make_files(root, server, case_list, *, limits="", repeats=1, key=CANARY, **exp):
    projects.make(root, case_list, repeats=repeats, package=PACKAGE, **exp, files={
        "aqven.yaml": aqven_yaml(server.url, limits),
        "agents/bot.yaml": 'apiVersion: "aqven/v1"\nkind: "Agent"\ndescription: "A model"\n'
                           'model: "local:m1"\nsettings: {temperature: 0, seed: 7}\n',
        "flows/rate/nodes/clean/clean.py": LEAKY_CLEAN})
    (root / "provider.py").unlink()
    (root / ".env").write_text(f"LOCAL_LLM_KEY={key}\n")
    server.responder = labeller
    return root


def split_cases(n: int, split: str = "dev", text: str = "fine", prefix: str = "c") -> list[tuple[str, str]]:
    from pytest_aqven.experiments.split import split_of
    names = (f"{prefix}{i:03d}" for i in range(1000))
    return [(name, text) for name in names if split_of(PACKAGE, "reviews", name) == split][:n]


def records(root) -> list[dict]:
    db = sqlite3.connect(root / ".aqven" / "aqven.sqlite")
    try:
        return [json.loads(r[0]) for r in db.execute("SELECT record FROM aqven_series_attempts ORDER BY case_name")]
    finally:
        db.close()


def verdict_of(output: str) -> str:
    lines = [l for l in output.splitlines() if l.startswith("rate_ok (")]
    assert len(lines) == 1, output
    return lines[0]


def verdict_line(result) -> str:
    return verdict_of(result.stdout.str())


@pytest.mark.slow
def test_a_series_on_an_http_provider_records_costs_and_retries(pytester, server):
    root = make(pytester, server, split_cases(4), repeats=2)
    server.script("m1", "429:0", "500")
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider")
    assert "signal - Signal on dev" in verdict_line(result)
    rows = records(root)
    calls = [c for r in rows for n in r["trace"]["nodes"] for c in n["calls"]]
    assert {(c["cost_usd"], c["cost_source"]) for c in calls} == {(server.cost, "provider")}
    assert sorted(c for call in calls for c, _ in call["retries"]) == ["http_500", "rate_limited"]
    assert all(r["cost_usd"] == pytest.approx(server.cost) and r["unpriced_calls"] == 0 for r in rows)
    body = server.requests[0]["body"]
    assert (body["temperature"], body["seed"], body["model"]) == (0, 7, "m1")




@pytest.mark.slow
def test_rpm_holds_across_two_worker_processes(pytester, server):
    rpm = 240
    make(pytester, server, split_cases(12), limits=f"  limits: {{rpm: {rpm}}}")
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", *XDIST["n2"])
    assert "signal - Signal on dev" in verdict_line(result)
    times = sorted(r["t"] for r in server.requests)
    assert len(times) == 12
    # slots are spaced 60/rpm apart across both processes; arrival jitter may bunch two, never more
    for i in range(len(times)):
        for j in range(i + 1, len(times)):
            assert j - i <= (times[j] - times[i]) * rpm / 60 + 1, (i, j, times)
    measured = (len(times) - 1) / (times[-1] - times[0]) * 60
    assert measured <= rpm * 1.05
    print(f"rpm limit {rpm}: measured {measured:.0f} requests/min over {len(times)} requests under -n 2")


@pytest.mark.slow
def test_a_recorded_series_replays_offline_with_the_same_verdict_and_sentence(pytester, server):
    case_list = [*split_cases(8, prefix="ok"), *split_cases(3, text="wrong", prefix="bad")]
    root = make(pytester, server, case_list, repeats=2)
    server.script("m1", "500")
    recorded = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-record", *XDIST["n2"])
    line = verdict_line(recorded)
    assert (root / "cassettes" / "rate_ok" / "bot").is_dir()
    assert CANARY not in "".join(p.read_text() for p in (root / "cassettes").rglob("*.json"))
    data = sorted(_measured(r) for r in records(root))
    server.stop()                                  # offline from here on
    (root / ".env").unlink()                       # and without the key
    for path in (root / ".aqven").glob("aqven.sqlite*"):
        path.unlink()
    replayed = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-replay")
    assert sorted(_measured(r) for r in records(root)) == data
    assert verdict_line(replayed) == line          # the verdict is a function of the data alone
    missing = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-replay", "--aqven-repeats", "3",
                                            "-rs")
    missing.stdout.fnmatch_lines(["*cassette_miss: node judge: local: no recording of this m1 call*"])


def _measured(record: dict) -> tuple:
    """What the models answered, as measured (a code node's wall time is measured again on replay)."""
    calls = [(c["outcome"], c["cost_usd"], c["latency_ms"], c["tokens_in"])
             for n in record["trace"]["nodes"] for c in n["calls"]]
    return (record["variant"], record["case"], record["repeat"], record["outcome"], record["passed"],
            record["cost_usd"], calls, json.dumps(record["checks"], sort_keys=True))


@pytest.mark.slow
def test_a_canary_key_reaches_no_output_of_the_run(pytester, server, monkeypatch):
    """The provider echoes the key in an error, and the flow's own code raises with it: no file the run
    writes (database, junit, html, findings, FINDINGS.md) and no terminal output contains it."""
    case_list = [(n, "leak" if i == 0 else "fine") for i, (n, _) in enumerate(split_cases(44, "holdout"))]
    root = make(pytester, server, case_list, above=0.5)
    monkeypatch.setenv("LOCAL_LLM_KEY", CANARY)     # the flow's own code can read it too
    server.script("m1", "400")                      # the first call: an error echoing Authorization
    before = {p: p.stat().st_mtime_ns for p in pytester.path.rglob("*") if p.is_file()}
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--aqven-holdout", "-rA", "-v",
                                           "--junitxml=junit.xml", "--html=report.html", "--tb=long")
    written = [p for p in pytester.path.rglob("*") if p.is_file() and before.get(p) != p.stat().st_mtime_ns]
    # read now: opening the database below may checkpoint and delete a WAL file the run left behind
    contents = {p: p.read_bytes() for p in written}
    names = {p.name for p in contents}
    assert {"junit.xml", "report.html", "aqven.sqlite", "FINDINGS.md"} <= names, names
    assert any(p.parent.name == "findings" for p in written)
    out = result.stdout.str() + result.stderr.str()
    # held-out attempts report their outcome only (docs/reports.md), and an infrastructure error's message without
    # case data: the HTTP status (not the body), the user code's exception type and line (not its message)
    assert "provider_error: node judge: local: HTTP 400\n" in out
    assert "code_invalid: node clean: clean raised RuntimeError at clean.py:" in out
    assert "could not reach the store" not in out
    stored = json.dumps(records(root))
    assert "node judge: local: HTTP 400" in stored and "[REDACTED]" in stored
    assert "could not reach the store with key [REDACTED]" in stored
    leaks = [p.name for p, data in contents.items() if CANARY.encode() in data]
    assert leaks == [] and CANARY not in out
    assert any(r["trace"]["nodes"] for r in records(root))
    assert re.search(r"confirmed|refuted|inconclusive", verdict_line(result))


COST_QUESTION = '''question:
  kind: "threshold"
  metric: "cost_usd"
  below: 0.01
  margin: 0
'''


@pytest.mark.parametrize("priced", [True, False], ids=["priced", "unpriced"])
@pytest.mark.slow
def test_an_unpriced_call_is_unknown_cost_never_free(pytester, server, priced):
    server.with_cost = priced
    root = make(pytester, server, split_cases(6))
    path = root / "experiments/rate_ok/experiment.yaml"
    text = path.read_text()
    text = text.replace('  use: "expected"\n', '  use: "expected"\n- id: "spend"\n  kind: "continuous"\n  use: "cost_usd"\n')
    path.write_text(text[:text.index("question:")] + COST_QUESTION + text[text.index("plan:"):])
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", "--junitxml=junit.xml", "-o",
                                           "junit_family=xunit1")
    line = verdict_line(result)
    rows = records(root)
    if priced:
        assert "signal - Signal on dev, not a finding: bot: cost_usd is $0.00042" in line
        assert "lower bound" not in result.stdout.str()
        assert {r["checks"]["spend"]["value"] for r in rows} == {server.cost}
        assert 'name="aqven_spend_lower_bound" value="false"' in (pytester.path / "junit.xml").read_text()
    else:
        assert all(r["unpriced_calls"] == 1 and r["cost_usd"] == 0 for r in rows)
        assert {r["checks"]["spend"]["state"] for r in rows} == {"error"}      # a cost check sees unknown, not $0
        assert "invalid - No finding: the primary metric has no data." in line     # not "$0: clears the bound"
        result.stdout.fnmatch_lines(["  spend: at least $0.0000, a lower bound: 6 calls had no known price*"])
        assert 'name="aqven_spend_lower_bound" value="true"' in (pytester.path / "junit.xml").read_text()
