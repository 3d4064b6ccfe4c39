"""A look shows every case with its checks, cost and trace, and writes no finding."""
from __future__ import annotations

import pytest

from .test_judges import judge, project, records

XDIST = [[], ["-n", "2"]]
CASES = [(f"ok_{i:02d}", "hello") for i in range(8)] + [(f"bad_{i}", "bad news") for i in range(6)]
LOOK = {"checks": [judge(),
                   {"id": "short", "kind": "binary", "use": "max_words", "with": {"field": "$out.reply", "max": 2}},
                   {"id": "spend", "kind": "continuous", "use": "cost_usd"}],
        "question": {"kind": "look"}}


def table(result) -> list[str]:
    lines = result.outlines
    start = next(i for i, l in enumerate(lines) if "aqven look: replies" in l)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("=", "-"))), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("xdist", XDIST, ids=["no-xdist", "n2"])
def test_a_look_prints_one_row_per_case_and_variant(pytester, xdist):
    project(pytester.path, CASES, {"replies": LOOK})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    rows = table(result)
    dev = sorted({r["case"] for r in records(pytester.path)})
    assert rows[0].startswith("-") and "aqven look: replies (dev, " in rows[0]
    assert rows[1].split() == ["case", "variant", "grade", "short", "spend", "cost", "$", "judges", "$", "latency", "ms"]
    assert [r.split()[0] for r in rows[2:]] == dev
    for row in rows[2:]:
        case = row.split()[0]
        if case.startswith("bad"):
            assert row.split()[1:] == ["bot", "FAIL:", "it", "says", "bad", "pass", "0.0002", "0.0002", "0.0010", "40"]
        else:
            assert row.split()[1:] == ["bot", "pass", "pass", "0.0002", "0.0002", "0.0010", "40"]
    assert "output:" not in result.stdout.str()
    assert not (pytester.path / "proj/experiments/replies/findings").exists()


def test_verbose_adds_the_output_and_the_failing_node(pytester):
    project(pytester.path, CASES + [(f"cut_{i}", "hello") for i in range(6)], {"replies": LOOK})
    provider = pytester.path / "proj/provider.py"
    provider.write_text(provider.read_text().replace(
        '    if request.node == "answer":\n',
        '    if request.node == "answer" and "cut_" in request.attempt.case:\n'
        '        return ModelResponse(text=\'{"reply": "go\', finish_reason="length")\n'
        '    if request.node == "answer":\n'))
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-v")
    rows = table(result)
    text = "\n".join(rows)
    assert '  output: {"reply": "good reply"}' in text and '  output: {"reply": "bad reply"}' in text
    cut = [i for i, r in enumerate(rows) if r.startswith("cut_")]
    assert cut, "no cut case on the working half"
    assert rows[cut[0]].split()[:4] == [rows[cut[0]].split()[0], "[model_fail]", "bot", "FAIL:"]
    assert rows[cut[0] + 1] == "  output: null"
    assert rows[cut[0] + 2].startswith("  failing node: answer: truncated: node answer: the model")
    assert rows[cut[0] + 2].endswith("answered with outcome truncated")


def test_a_held_out_look_shows_no_case(pytester):
    project(pytester.path, CASES, {"replies": LOOK})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-v", "--aqven-holdout")
    rows = table(result)
    assert rows[1:] == ["held-out cases are never shown one by one: the attempts are in the database"]
    assert not (pytester.path / "proj/experiments/replies/findings").exists()
