"""A container policy never absorbs an infrastructure error: pytest runs of flows whose map skips failed items or
whose parallel skips failed branches, against the chat-completions server on 127.0.0.1, with the mistakes that
used to publish a false `refuted` (the key unset, a model the server does not know). Every attempt is skipped as
an infrastructure error naming the container, the item or branch and the original error; the verdict is invalid,
no finding is written, and no call is made past the first failed item."""
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


def assert_unmeasured(result, root, reason: str, note: str) -> list[dict]:
    """Every attempt skipped with one reason, `reason` ... `note`; the verdict invalid on the infrastructure errors;
    no finding."""
    out = result.stdout.str()
    skipped = re.findall(r"SKIPPED \[(\d+)\] \S+: (.*)", out)
    assert len({why for _, why in skipped}) == 1, skipped
    assert skipped[0][1].startswith(reason) and skipped[0][1].endswith(note), skipped
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped") == sum(int(n) for n, _ in skipped) == CASES, outcomes
    assert outcomes.get("xfailed", 0) == 0 and outcomes.get("passed", 0) == 0
    assert f"verdict invalid: No finding: {CASES} of {CASES} attempts hit infrastructure errors." in out
    assert "refuted" not in out and result.ret == pytest.ExitCode.TESTS_FAILED
    assert not (root / "experiments/rate_ok/findings").exists() and not (root / "FINDINGS.md").exists()
    rows = records(root)
    assert len(rows) == CASES and {(r["outcome"], r["passed"]) for r in rows} == {("infra_error", None)}
    return rows


def test_a_map_that_skips_items_never_skips_a_missing_key(pytester, server, monkeypatch, xdist):
    monkeypatch.delenv("LOCAL_LLM_KEY", raising=False)
    root = wired(pytester, server, MAP)
    (root / ".env").unlink()
    result = held_out_run(pytester, xdist)
    rows = assert_unmeasured(result, root, "provider_key_missing: node each: item 0: node judge: provider local: "
                                           "no API key: set LOCAL_LLM_KEY", SKIP)
    assert {r["error_code"] for r in rows} == {"provider_key_missing"}
    assert server.requests == []


def test_a_map_that_skips_items_never_skips_a_model_the_server_does_not_know(pytester, server, xdist):
    root = wired(pytester, server, MAP)
    server.unknown_models = {"m1"}
    result = held_out_run(pytester, xdist)
    rows = assert_unmeasured(result, root, "provider_error: node each: item 0: node judge: local: HTTP 404", SKIP)
    assert {r["error_code"] for r in rows} == {"provider_error"}
    assert {r["first_failed_node"] for r in rows} == {"each"}
    # the original error, as the provider gave it, in each attempt's trace at the item that failed
    failed = [(n["node"], n["item"], n["error_code"]) for r in rows for n in r["trace"]["nodes"]
              if n["status"] == "failed" and n["kind"] == "llm"]
    assert failed == [("each__judge", 0, "provider_error")] * CASES
    # one call per attempt: the first sentence's; the two after it never start
    assert len(server.requests) == CASES and {q["model"] for q in server.requests} == {"m1"}


def test_a_quorum_that_skips_failed_branches_never_skips_an_outage(pytester, server, xdist):
    root = wired(pytester, server, QUORUM)
    server.unknown_models = {"ghost"}
    result = held_out_run(pytester, xdist)
    rows = assert_unmeasured(result, root, "provider_error: node raters: branch a: node rate_a: local: HTTP 404",
                             " (join use: quorum absorbs only the model's own failures)")
    assert {r["error_code"] for r in rows} == {"provider_error"}
    ghost = [q for q in server.requests if q["model"] == "ghost"]
    assert len(ghost) == CASES and len(server.requests) <= 3 * CASES     # the other raters: cancelled or answered


def test_one_item_lost_to_an_outage_is_an_unmeasured_attempt_counted_by_the_five_percent_rule(pytester, server,
                                                                                              xdist):
    """1 of 6 attempts unmeasured is more than 5%: invalid, where skipping the item kept the attempt `ok`."""
    root = wired(pytester, server, MAP)
    server.script("m1", "400")         # the first call of the series fails; the other 17 answer
    result = held_out_run(pytester, xdist)
    out = result.stdout.str()
    rows = records(root)
    assert sorted(r["outcome"] for r in rows) == ["infra_error"] + ["ok"] * (CASES - 1)
    assert f"verdict invalid: No finding: 1 of {CASES} attempts hit infrastructure errors." in out
    assert re.search(rf"^rate_ok +threshold +bot +invalid .* {CASES}/{CASES} +1 ", out, re.M), out   # infra column
    assert len(server.requests) == 1 + 3 * (CASES - 1)
