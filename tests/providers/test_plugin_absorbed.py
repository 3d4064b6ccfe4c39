"""A container policy never absorbs an infrastructure error: pytest runs of flows whose map skips failed items or
whose parallel skips failed branches, against the chat-completions server on 127.0.0.1, with the mistakes that
used to publish a false `refuted` (the key unset, a model the server does not know). Every attempt is skipped as
an infrastructure error naming the container, the item or branch and the original error; a permanent one (the
key, a model the server does not know) stops the series at its first attempt; the verdict is invalid, no finding
is written, and no call is made past the first failed item."""
from __future__ import annotations

import re

import pytest

from .. import projects
from .test_plugin_http import PACKAGE, make_files, records, split_cases

JUDGE = {
    "judge.inference.yaml": projects.FILES["flows/rate/nodes/judge/judge.inference.yaml"],
    "judge.prompt.md": projects.FILES["flows/rate/nodes/judge/judge.prompt.md"],
}

PICK = {
    # the first label kept, else negative: what a flow makes of items or branches that were all left out
    "flows/rate/nodes/pick/pick.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "The first label, or negative when there is none"
        run: "pick"
        in:
        - name: "labels"
          from: "{labels}"
        out:
        - name: "label"
          type: "Label"
        ''',
    "flows/rate/nodes/pick/pick.py": '''
        def pick(labels: list) -> dict:
            return {"label": labels[0] if labels else "negative"}
        ''',
}


def rate_flow(container: str) -> dict:
    return {"flows/rate/flow.yaml": f'''
        apiVersion: "aqven/v1"
        kind: "Flow"
        description: "Clean a review, rate it in {container}, pick a label"
        input: "Review"
        output: "Rating"
        order:
        - "clean"
        - "{container}"
        - "pick"
        returns:
        - name: "label"
          from: "$pick.out.label"
        ''', **{k: v.replace("{labels}", f"${container}.out.labels") for k, v in PICK.items()}}


# the map of docs/reference.md, one sentence at a time: each sentence of the review rated, failed items skipped
MAP = {
    **rate_flow("each"),
    "flows/rate/nodes/clean/clean.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "code"
        description: "Split the review into sentences"
        run: "clean"
        in:
        - name: "text"
          from: "$input.text"
        out:
        - name: "sentences"
          type: "Text[]"
        ''',
    "flows/rate/nodes/clean/clean.py": '''
        def clean(text: str) -> dict:
            return {"sentences": [s.strip() for s in text.split(".") if s.strip()]}
        ''',
    "flows/rate/nodes/each/each.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "map"
        description: "Rate each sentence, one at a time"
        over: "$clean.out.sentences"
        body: "judge"
        concurrency: 1
        on_item_error:
          use: "skip"
        out:
        - name: "labels"
          type: "Label[]"
          from: "$ok[*].label"
        ''',
    "flows/rate/nodes/each/judge.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Rate one sentence"
        agent: "bot"
        in:
        - name: "text"
          from: "$item"
        ''',
    **{f"flows/rate/nodes/each/{name}": text for name, text in JUDGE.items()},
}


def branch(agent: str) -> str:
    return f'''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "llm"
        description: "Rate the review on {agent}"
        agent: "{agent}"
        inference: "judge"
        in:
        - name: "text"
          from: "$clean.out.text"
        '''


# three raters, two of which must answer; a failed rater is skipped
QUORUM = {
    **rate_flow("raters"),
    "flows/rate/nodes/raters/raters.node.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Node"
        node: "parallel"
        description: "Three raters, two must agree to answer"
        body:
          a: "rate_a"
          b: "rate_b"
          c: "rate_c"
        join:
          use: "quorum"
          with:
            min_ok: 2
            on_error: "skip"
        out:
        - name: "labels"
          type: "Label[]"
          from: "$ok[*].label"
        ''',
    "flows/rate/nodes/raters/rate_a.node.yaml": branch("ghost"),
    "flows/rate/nodes/raters/rate_b.node.yaml": branch("bot"),
    "flows/rate/nodes/raters/rate_c.node.yaml": branch("bot"),
    **{f"flows/rate/nodes/raters/{name}": text for name, text in JUDGE.items()},
    "agents/ghost.yaml": 'apiVersion: "aqven/v1"\nkind: "Agent"\ndescription: "A model the server does not know"\n'
                         'model: "local:ghost"\n',
}

CASES = 6          # held-out cases, one repeat each: 6 attempts
SKIP = " (on_item_error use: skip absorbs only the model's own failures)"


def wired(pytester, server, files: dict):
    root = make_files(pytester.path / "proj", server, split_cases(CASES, "holdout", "good. nice. fine"))
    for name in ("judge.node.yaml", "judge.inference.yaml", "judge.prompt.md"):
        (root / "flows/rate/nodes/judge" / name).unlink()
    projects.write_files(root, files, PACKAGE)
    return root


def held_out_run(pytester, xdist):
    return pytester.runpytest_subprocess("proj", "--aqven-holdout", "-rs", "-p", "no:cacheprovider", *xdist)


def assert_stopped(result, root, fault: str, recorded: int = 0) -> list[dict]:
    """A permanent fault absorbed by a policy is an infrastructure error all the same, so it stops the series
    at its first attempt (issue 41's plumbing rule and its stop-before-spending rule together): every attempt is
    skipped with one line naming the provider, the model or key, and the fix; the verdict is invalid; no finding;
    only an attempt that paid for a call is recorded (the others run again after the fix)."""
    out = result.stdout.str()
    skipped = re.findall(r"SKIPPED \[(\d+)\] \S+: (.*)", out)
    stops = [(int(n), why) for n, why in skipped if why.startswith("series ")]
    assert len({why for _, why in stops}) == 1 and sum(n for n, _ in stops) == CASES - recorded, skipped
    why = stops[0][1]
    assert " stopped at a permanent error, nothing more is spent: " in why, why
    assert fault in why and why.endswith("then run the same command: it continues the series (provider_unusable)")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped") == sum(int(n) for n, _ in skipped) == CASES, outcomes
    assert outcomes.get("xfailed", 0) == 0 and outcomes.get("passed", 0) == 0
    assert "verdict invalid: series " in out and "refuted" not in out and result.ret == pytest.ExitCode.TESTS_FAILED
    assert re.search(r"^rate_ok \(holdout(, \d+/\d+ attempts)?\): invalid - series ", out, re.M), out   # the summary too
    assert not (root / "experiments/rate_ok/findings").exists() and not (root / "FINDINGS.md").exists()
    rows = records(root)
    assert len(rows) == recorded and {(r["outcome"], r["passed"]) for r in rows} <= {("infra_error", None)}
    return rows


@pytest.mark.slow
def test_a_map_that_skips_items_never_skips_a_missing_key(pytester, server, monkeypatch, xdist):
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    root = wired(pytester, server, MAP)
    (root / ".env").unlink()
    result = held_out_run(pytester, xdist)
    assert_stopped(result, root, "LOCAL_LLM_KEY")
    assert server.requests == []


@pytest.mark.slow
def test_a_map_that_skips_items_never_skips_a_model_the_server_does_not_know(pytester, server, xdist):
    root = wired(pytester, server, MAP)
    server.unknown_models = {"m1"}
    result = held_out_run(pytester, xdist)
    assert_stopped(result, root, "provider local, model m1: HTTP 404")
    # one call in all: the first attempt's first sentence; no item after it, no attempt after it starts
    assert len(server.requests) == 1 and {q["model"] for q in server.requests} == {"m1"}


@pytest.mark.slow
def test_a_quorum_that_skips_failed_branches_never_skips_an_outage(pytester, server, xdist):
    root = wired(pytester, server, QUORUM)
    server.unknown_models = {"ghost"}
    result = held_out_run(pytester, xdist)
    rows = assert_stopped(result, root, "model ghost: HTTP 404", recorded=len(records(root)))
    assert len(rows) <= 1 and {r["error_code"] for r in rows} <= {"provider_error"}   # recorded if it paid a rater
    ghost = [q for q in server.requests if q["model"] == "ghost"]
    assert len(ghost) == 1 and len(server.requests) <= 3     # the first attempt's raters only


@pytest.mark.slow
def test_one_item_lost_to_an_outage_is_an_unmeasured_attempt_counted_by_the_five_percent_rule(pytester, server,
                                                                                              xdist):
    """1 of 6 attempts unmeasured is more than 5%: invalid, where skipping the item kept the attempt `ok`."""
    root = wired(pytester, server, MAP)
    server.script("m1", "400")         # the first call of the series fails; the other 17 answer
    result = held_out_run(pytester, xdist)
    out = result.stdout.str()
    rows = records(root)
    assert sorted(r["outcome"] for r in rows) == ["infra_error"] + ["ok"] * (CASES - 1)
    assert (f"verdict invalid: No finding: 1 of {CASES} attempts hit infrastructure errors (1 of {CASES} cases had "
            "none measured).") in out
    assert re.search(rf"^rate_ok +threshold +bot +invalid .* {CASES}/{CASES} +1 ", out, re.M), out   # infra column
    assert len(server.requests) == 1 + 3 * (CASES - 1)
