"""A held-out run whose failing cases are the ones never measured: their inputs are too large to send under
the spend cap (budget_cut). They used to drop out of the verdict and leave a clean 1.00 behind."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from pytest_aqven.experiments.split import split_of
from pytest_aqven.findings.verify import recompute

from .. import faults, projects

BIG = 1 << 20        # a 1 MB review: its input alone costs more than the $0.05 cap at gpt-4o's price
CAP = "research:\n  spend_cap_usd: 0.05\n"


class Labeller(BaseHTTPRequestHandler):
    """Chat completions on 127.0.0.1 reporting usage (genai-prices prices gpt-4o): a review that says
    "hard" is labelled negative, every other positive (every expected label is positive)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        label = "negative" if b"hard" in body else "positive"
        data = json.dumps({"id": "x", "object": "chat.completion", "model": "gpt-4o",
                           "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": 5},
                           "choices": [{"index": 0, "finish_reason": "stop", "message": {
                               "role": "assistant", "content": json.dumps({"label": label})}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def labeller():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Labeller)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def project(pytester, url: str, big: bool, every: int = 4, above: float = 0.7) -> tuple[int, int]:
    """48 cases, every `every`th held-out one hard (1 MB or a few bytes): (held-out cases, hard ones)."""
    names = [f"case_{i:02d}" for i in range(48)]
    held = [n for n in names if split_of("testproj", "reviews", n) == "holdout"]
    hard = set(held[::every])
    text = "hard " * (BIG // 5) if big else "hard"
    root = projects.make(pytester, [(n, text if n in hard else "fine") for n in names], above=above)
    faults.on_catalog_server(root, url)
    (root / "aqven.yaml").write_text((root / "aqven.yaml").read_text() + CAP)
    return len(held), len(hard)


def holdout(pytester, xdist):
    return pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", "-rs", *xdist)


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789")


@pytest.mark.slow
def test_short_hard_cases_are_measured_and_fail(pytester, labeller, key, xdist):
    held, hard = project(pytester, labeller, big=False)
    out = holdout(pytester, xdist).stdout.str()
    rate = (held - hard) / held
    assert f"verdict inconclusive: bot: label is {rate:.2f}" in out, out


@pytest.mark.slow
def test_hard_cases_too_large_for_the_cap_are_not_measured_and_confirm_nothing(pytester, labeller, key, xdist):
    """Before: `confirmed - bot: label is 1.00 (95% CI 0.80 to 1.00)`, exit 0, no finding said a case was missing."""
    held, hard = project(pytester, labeller, big=True)
    result = holdout(pytester, xdist)
    out = result.stdout.str()
    assert "budget_exceeded" in out, out
    said = (f"verdict invalid: No finding: {2 * hard} of {2 * held} attempts were not measured "
            f"({2 * hard} cut by the spend cap; {hard} of {held} cases had none measured).")
    assert said in out, out
    assert "confirmed" not in out and result.ret != 0, out
    assert not faults.finding_files(pytester.path / "proj")


@pytest.mark.slow
def test_one_case_too_large_is_counted_against_the_claim_and_its_finding_decides_so_again(pytester, labeller, key,
                                                                                          xdist):
    """Under 5% unmeasured the verdict is decided, with the unmeasured attempts as failures too: 22 cases that
    all pass clear 0.8, 22 and one failing do not. Before: confirmed 1.00 (0.84 to 1.00)."""
    held, hard = project(pytester, labeller, big=True, every=100, above=0.8)
    out = holdout(pytester, xdist).stdout.str()
    assert hard == 1 and "budget_exceeded" in out, out
    assert ("verdict inconclusive: bot: label is 1.00 (95% CI 0.85 to 1.00) against above 0.8 with margin 0: "
            "decided only without the unmeasured attempts (with them: 0.96, 95% CI 0.78 to 0.9999); "
            f"2 of {2 * held} attempts were not measured (2 cut by the spend cap; 1 of {held} cases had none "
            "measured) and count against the claim.") in out, out
    (path,) = faults.finding_files(pytester.path / "proj")
    finding = yaml.safe_load(path.read_text())
    assert finding["reason"] == "unmeasured" and finding["cells"][0]["counted_against"]["low"] < 0.8
    assert finding["data"]["unmeasured"]["budget_cut"] == 2
    assert faults.aqven(pytester.path, "check", "proj").returncode == 0
    del finding["data"]["unmeasured"]     # the data decide the verdict: without the unmeasured, it confirms
    assert recompute(finding).state == "confirmed"
