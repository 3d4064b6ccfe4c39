"""A look shows every case with its checks, cost and trace, and writes no finding."""
from __future__ import annotations

from ..experiments.test_judges import judge, project, records

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


def test_a_look_is_skipped_under_holdout_with_a_line_saying_why(pytester, xdist):
    """A look shows every case one by one: on held-out cases it would spend them and show nothing."""
    project(pytester.path, CASES, {"replies": LOOK})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rs", "--aqven-holdout", "--junitxml=j.xml", *xdist)
    # (an in-process run started from the `pytest` script may add pytest's own assert-rewrite warning)
    outcomes = result.parseoutcomes()
    outcomes.pop("warnings", None)
    assert result.ret == 0 and outcomes == {"skipped": 1}
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] proj/experiments/replies/experiment.yaml:1: a look is skipped under "
                                 "--aqven-holdout: it shows every case one by one, and held-out cases are never shown "
                                 "nor spent on a look; run it on the working cases (without --aqven-holdout)"])
    assert not (pytester.path / "proj/.aqven/aqven.sqlite").exists() or records(pytester.path) == []
    assert not (pytester.path / "proj/experiments/replies/findings").exists()
    assert "aqven look" not in result.stdout.str()
    junit = (pytester.path / "j.xml").read_text()
    assert 'name="replies::look"' in junit and "never shown nor spent on a look" in junit


def _look_rows_in_html(text: str) -> list[list[str]]:
    """The cells of the look table in a pytest-html report, parsed as html."""
    from html.parser import HTMLParser

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.inside, self.rows, self.cell = False, [], None

        def handle_starttag(self, tag, attrs):
            if tag == "table" and ("class", "aqven-look") in attrs:
                self.inside = True
            elif self.inside and tag == "tr":
                self.rows.append([])
            elif self.inside and tag in ("td", "th"):
                self.cell = ""

        def handle_endtag(self, tag):
            if tag == "table":
                self.inside = False
            elif self.inside and tag in ("td", "th"):
                self.rows[-1].append(self.cell)
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    parser = Rows()
    parser.feed(text)
    return parser.rows


def test_the_look_table_is_in_junit_and_in_the_html_report(pytester, xdist):
    import xml.etree.ElementTree as ET

    project(pytester.path, CASES, {"replies": LOOK})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--junitxml=j.xml", "-o", "junit_family=xunit1", "--html=r.html",
                                "--self-contained-html", *xdist)
    assert result.ret == 0
    terminal = [row.split()[:2] for row in table(result)[2:]]
    dev = sorted({r["case"] for r in records(pytester.path)})
    bad = next(c for c in dev if c.startswith("bad"))
    ok = next(c for c in dev if c.startswith("ok"))

    html = _look_rows_in_html((pytester.path / "r.html").read_text())
    assert html[0] == ["case", "variant", "grade", "short", "spend", "cost $", "judges $", "latency ms"]
    assert [row[:2] for row in html[1:]] == terminal == [[c, "bot"] for c in dev]
    assert dict((r[0], r[2:]) for r in html[1:])[bad] == ["FAIL: it says bad", "pass", "0.0002", "0.0002", "0.0010", "40"]
    assert dict((r[0], r[2:]) for r in html[1:])[ok] == ["pass", "pass", "0.0002", "0.0002", "0.0010", "40"]

    testcases = list(ET.parse(pytester.path / "j.xml").getroot().iter("testcase"))
    verdict = next(c for c in testcases if c.get("name").endswith("::verdict"))
    props = {p.get("name"): p.get("value") for p in verdict.iter("property")}
    assert sorted(k for k in props if k.startswith("aqven_look.")) == sorted(f"aqven_look.{c}.bot" for c in dev)
    assert props[f"aqven_look.{bad}.bot"] == ("ok; grade=FAIL: it says bad; short=pass; spend=0.0002; cost $=0.0002; "
                                             "judges $=0.0010; latency ms=40")
    attempt = next(c for c in testcases if c.get("classname").endswith(f".bot.{bad}"))
    assert [(p.get("name"), p.get("value")) for p in attempt.iter("property")] == [
        ("aqven_outcome", "ok"), ("aqven_passed", "false"), ("aqven_case", bad), ("aqven_variant", "bot"),
        ("aqven_repeat", "1"), ("aqven_check.grade", "failed: it says bad"), ("aqven_check.grade.value", "0"),
        ("aqven_check.short", "passed"), ("aqven_check.short.value", "1"), ("aqven_check.spend", "passed"),
        ("aqven_check.spend.value", "0.0002"), ("aqven_cost_usd", "0.0002"), ("aqven_latency_ms", "40"),
        ("aqven_judges_cost_usd", "0.001")]




def test_a_score_cell_is_the_mean_of_the_scores_that_carry_a_value():
    from pytest_aqven.record import CheckScore
    from pytest_aqven.report.look import _check_cell

    assert _check_cell([CheckScore("passed", 4.0), CheckScore("failed", 2.5)], "ordinal") == ("3.25", None, True)
    assert _check_cell([CheckScore("passed", 4.0), CheckScore("passed", None), CheckScore("failed", 2.0, "low")],
                       "ordinal") == ("3", "low", True)
    assert _check_cell([CheckScore("passed", None)], "continuous") == ("-", None, False)
