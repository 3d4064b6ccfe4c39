"""What people and CI tools read: attempt reports, held-out redaction, junit, --aqven-json, hooks."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from functools import partial
from pathlib import Path

import pytest

from pytest_aqven.experiments.split import split_of
from pytest_aqven.stats.model import case_key, experiment_salt

from .. import projects
from ..conftest import XDIST

PACKAGE = "reportproj"
SECRET = "SECRETCASE"       # in every case's input text: must never reach a report of a held-out run


def cases_in(split: str, kinds: list[str], per_kind: int) -> list[tuple[str, str]]:
    """per_kind cases of each kind ('wrong', 'refuse', 'crash', 'fine') whose names fall in `split`."""
    out = []
    for kind in kinds:
        names = (f"{kind}_{i:03d}" for i in range(1000))
        picked = [n for n in names if split_of(PACKAGE, "reviews", n) == split][:per_kind]
        out += [(n, f"{kind} {SECRET}") for n in picked]
    return out


make = partial(projects.make, package=PACKAGE)      # make(pytester, cases, **experiment): the project proj


def look(pytester, case_list) -> Path:
    files = projects.experiment(repeats=1)
    (path, text), = files.items()
    text = re.sub(r"question:\n(  .*\n)+", 'question:\n  kind: "look"\n', text)
    return make(pytester, case_list, files={path: text})


def call_reports(reprec):
    return [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"]


def test_attempt_reports_carry_the_failed_checks_not_a_traceback(pytester):
    make(pytester, cases_in("dev", ["wrong", "refuse", "crash", "bug"], 1) + cases_in("dev", ["fine"], 4), repeats=1)
    reprec = pytester.inline_run("proj", "-p", "no:cacheprovider")
    by_case = {r.nodeid.split("::")[2]: r for r in call_reports(reprec) if "::verdict" not in r.nodeid}
    wrong = next(r for c, r in by_case.items() if c.startswith("wrong"))
    refuse = next(r for c, r in by_case.items() if c.startswith("refuse"))
    crash = next(r for c, r in by_case.items() if c.startswith("crash"))
    assert wrong.wasxfail == "label: fields differ from expected_output: label"
    text = str(wrong.longrepr)
    assert "label: failed - fields differ from expected_output: label" in text
    assert "Traceback" not in text and "_pytest" not in text and len(text) < 300
    assert "label: failed - the run produced no output: refusal" in str(refuse.longrepr)
    assert crash.skipped and crash.longrepr[2] == "Skipped: provider_error: node judge: HTTP 503 from the test provider"
    bug = next(r for c, r in by_case.items() if c.startswith("bug"))      # the user's code raised: where
    assert re.fullmatch(r"Skipped: code_invalid: .*RuntimeError: a bug in the flow's own code at clean\.py:\d+",
                        bug.longrepr[2]), bug.longrepr


def test_held_out_attempts_report_the_outcome_only(pytester, xdist):
    case_list = cases_in("holdout", ["wrong", "refuse", "crash"], 1) + cases_in("holdout", ["fine"], 30)
    make(pytester, case_list, repeats=1, above=0.5)
    junit, html, js = (pytester.path / n for n in ("junit.xml", "report.html", "report.json"))
    result = pytester.runpytest("proj", "--aqven-holdout", "-rxs", "-v", "-p", "no:cacheprovider", f"--junitxml={junit}", "-o", "junit_family=xunit1",
                                f"--html={html}", "--self-contained-html", f"--aqven-json={js}", *xdist)
    out = result.stdout.str()
    # a held-out case is named by its finding's salted key, never by its name
    key = {n: "case-" + case_key(experiment_salt(PACKAGE, "rate_ok"), n) for n, _ in case_list}
    wrong = key[next(n for n, _ in case_list if n.startswith("wrong"))]
    crash = key[next(n for n, _ in case_list if n.startswith("crash"))]
    result.stdout.fnmatch_lines_random([
        f"XFAIL proj/experiments/rate_ok/experiment.yaml::bot::{wrong}::1 - failed label (held out: details stay in the database)",
        # an infrastructure error's message without case data: where it was raised, never the provider's text
        "SKIPPED [[]1[]] proj/experiments/rate_ok/experiment.yaml:1: provider_error: node judge: function provider "
        "raised provider_error at provider.py:10"])
    assert re.search(rf"::{crash}::1 SKIPPED|SKIPPED \S+::{crash}::1", out)
    secrets = (SECRET, "fields differ", "no output", "HTTP 503", "cannot help", *(n for n, _ in case_list))
    for name, text in (("terminal", out), ("junit", junit.read_text()), ("html", html.read_text()),
                       ("json", js.read_text())):
        leaked = [s for s in secrets if s in text]
        assert not leaked, f"{name} shows {leaked}"
    root = ET.parse(junit).getroot()
    attempt = next(c for c in root.iter("testcase") if c.get("classname").endswith(wrong))
    assert {p.get("name"): p.get("value") for p in attempt.iter("property")} == {"aqven_outcome": "ok", "aqven_passed": "false"}  # the outcome only
    assert json.loads(js.read_text())["series"][0]["attempts"]["failed_checks"] == 2


def test_junit_has_a_verdict_testcase_with_the_figures(pytester, xdist):
    make(pytester, [(f"c{i:02d}", "wrong") for i in range(40)], repeats=1, above=0.5)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", f"--junitxml={junit}", "-o", "junit_family=xunit1", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    verdict = next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name").endswith("::verdict"))
    props = {p.get("name"): p.get("value") for p in verdict.iter("property")}
    failure = verdict.find("failure")
    assert failure.get("message").startswith("verdict refuted: bot: label is 0.00 (95% CI 0.00 to ")
    assert props["aqven_verdict"] == "refuted" and props["aqven_split"] == "holdout"
    assert re.fullmatch(r"0\.00 \[0\.00, 0\.\d\d\] against above 0\.5 with margin 0: fail", props["aqven_cell.bot.label"])
    assert props["aqven_attempts"] == f"{props['aqven_attempts'].split('/')[0]}/{props['aqven_attempts'].split('/')[0]}"
    assert props["aqven_infra_errors"] == "0" and props["aqven_unpriced_calls"] == "0"
    assert props["aqven_next"].startswith("drop the hypothesis")
    assert props["aqven_finding"].endswith(".yaml")


def test_a_look_is_state_none_in_junit(pytester):
    look(pytester, projects.cases(12))
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", f"--junitxml={junit}", "-o", "junit_family=xunit1")
    assert result.ret == 0
    verdict = next(c for c in ET.parse(junit).getroot().iter("testcase") if c.get("name").endswith("::verdict"))
    props = {p.get("name"): p.get("value") for p in verdict.iter("property")}
    assert props["aqven_verdict"] == "none"
    assert "None" not in ET.tostring(verdict, encoding="unicode")


def _normalised(path: Path) -> str:
    text = path.read_text()
    text = re.sub(r'(time|timestamp|hostname)="[^"]*"', r'\1=""', text)       # timings
    text = re.sub(r'"aqven_latency_ms" value="\d+"', '"aqven_latency_ms" value=""', text)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<series>", text)


@pytest.mark.slow
def test_junit_is_the_same_with_and_without_xdist(pytester):
    case_list = [("wrong_2", "wrong"), ("c_refuse", "refuse"), ("c_crash", "crash"),
                 *[(f"ok_{i}", "fine") for i in (2, 6, 7, 9, 10, 12)]]
    make(pytester, case_list, repeats=3)
    files = []
    for name, xdist in XDIST.items():
        pytester.runpytest("proj", "-p", "no:cacheprovider", f"--junitxml={name}.xml", *xdist)
        files.append(_normalised(pytester.path / f"{name}.xml"))
    dev = [n for n, _ in case_list if split_of(PACKAGE, "reviews", n) == "dev"]
    assert files[0].count("<testcase") == len(dev) * 3 + 1 and 'name="rate_ok::verdict"' in files[0]
    assert files[0] == files[1]


def asking(question: str, name: str, two_variants: bool = False) -> str:
    """The threshold experiment of tests/projects.py asking another question (with a second agent's variant)."""
    text = projects.experiment(name=name)[f"experiments/{name}/experiment.yaml"]
    text = text[:text.index("question:")] + question
    if two_variants:
        text = text.replace('variants:\n- id: "bot"\n', 'varies:\n  what: "agent"\n  nodes:\n  - "judge"\n'
                            'variants:\n- id: "bot"\n- id: "bot2"\n  nodes:\n    judge: "bot2"\n')
    return text


def pair(kind: str) -> str:
    return asking(f'question:\n  kind: "{kind}"\n  baseline: "bot"\n  candidate: "bot2"\n  primary: "label"\n'
                  '  margin: 0.1\nplan:\n  repeats: 2\n', f"pair_{kind}", two_variants=True)


def test_the_shipped_json_schema_is_generated_from_the_definition_the_writer_validates_with():
    """One typed definition (json_report.JsonReport): the shipped schema is generated from it (`python -m
    pytest_aqven.report.json_report` writes it), and the writer refuses a document that does not fit it."""
    from pydantic import ValidationError

    from pytest_aqven.report import json_report

    assert json_report.SCHEMA.read_text(encoding="utf-8") == json_report.schema_text(), \
        "the shipped schema is stale: run python -m pytest_aqven.report.json_report"
    with pytest.raises(ValidationError, match="surprise"):
        json_report.document([{"surprise": 1}])


@pytest.mark.parametrize("split", [[], ["--aqven-holdout"]], ids=["dev", "holdout"])
def test_json_report_of_every_question_kind_validates_against_the_shipped_schema(pytester, split):
    import os
    import stat

    jsonschema = pytest.importorskip("jsonschema")
    from pytest_aqven.report.json_report import SCHEMA
    schema = json.loads(SCHEMA.read_text())
    make(pytester, projects.cases(16, "flaky"), repeats=3, above=0.5, margin=0.05, files={
        "agents/bot2.yaml": 'apiVersion: "aqven/v1"\nkind: "Agent"\ndescription: "Another"\nmodel: "fake:bot-2"\n',
        "experiments/pair_compare/experiment.yaml": pair("compare"),
        "experiments/pair_noninferior/experiment.yaml": pair("noninferior"),
        "experiments/seen/experiment.yaml": asking('question:\n  kind: "look"\n', "seen")})
    js = pytester.path / "out/report.json"
    old = os.umask(0o022)
    try:
        pytester.runpytest("proj", *split, "-p", "no:cacheprovider", f"--aqven-json={js}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(js.stat().st_mode) == 0o644         # the user's umask, as any file they write
    doc = json.loads(js.read_text())
    jsonschema.validate(doc, schema)
    by_kind = {s["question"]: s for s in doc["series"]}
    # a look never runs on held-out cases (it would show them one by one): no series of it there
    assert sorted(by_kind) == (["compare", "noninferior", "threshold"] if split else
                               ["compare", "look", "noninferior", "threshold"])
    assert all(s["project"] == "proj" for s in doc["series"])
    first = by_kind["threshold"]
    assert first["cells"][0]["estimate"]["low"] <= first["cells"][0]["estimate"]["value"] <= first["cells"][0]["estimate"]["high"]
    assert set(first["stability"]["bot"]) == {"always", "never", "flaky", "pass_hat_k", "k"}
    assert first["spend"]["usd"] > 0 and first["spend"]["lower_bound"] is False
    if split:
        # the held-out half of 16 flaky cases (a rate near 0.6): an interval too wide to decide against 0.55
        assert (first["verdict"]["state"], first["verdict"]["reason"]) == ("inconclusive", "below_mde")
        assert first["finding_path"].startswith("experiments/rate_ok/findings/")       # relative to the project
        assert (pytester.path / first["project"] / first["finding_path"]).is_file()


CONFTEST = '''
import json, pathlib

LOG = pathlib.Path(__file__).parent / "verdicts.jsonl"

def pytest_aqven_verdict(config, series, verdict, cells, finding_path):
    with LOG.open("a") as f:
        f.write(json.dumps({"experiment": series["experiment"], "state": verdict and verdict["state"],
                            "cells": len(cells), "finding": finding_path}) + "\\n")

def pytest_aqven_attempt_scored(config, record):
    with (pathlib.Path(__file__).parent / "attempts.txt").open("a") as f:
        f.write(f"{record.case} {record.outcome}\\n")

def pytest_aqven_series_start(config, series):
    if series["experiment"] == "too_big":
        return f"{series['attempts']} attempts exceed the team budget of 10"
'''


def test_hooks_see_each_attempt_and_verdict_once_and_can_veto_a_series(pytester, xdist):
    make(pytester, projects.cases(8), repeats=2, files=projects.experiment("too_big", repeats=3))
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest("proj", "-rs", "-p", "no:cacheprovider", *xdist)
    verdicts = [json.loads(l) for l in (pytester.path / "verdicts.jsonl").read_text().splitlines()]
    assert verdicts == [{"experiment": "rate_ok", "state": "signal", "cells": 1, "finding": None}]
    attempts = (pytester.path / "attempts.txt").read_text().splitlines()
    dev = len([1 for n, _ in projects.cases(8) if split_of(PACKAGE, "reviews", n) == "dev"])
    assert len(attempts) == dev * 2 and all(l.endswith(" ok") for l in attempts)
    result.stdout.fnmatch_lines([f"SKIPPED [[]{dev * 3}[]] *: series not started: {dev * 3} attempts exceed the team budget of 10"])
    assert result.ret == 0


def test_terminal_table_then_sentences_and_what_to_do_next(pytester):
    make(pytester, projects.cases(16, "flaky"), repeats=2, above=0.9, margin=0.05)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    out = result.outlines
    plan = next(l for l in out if l.startswith("aqven plan rate_ok (dev): "))
    assert "attempts (" in plan and "cases × 2 repeats × 1 variant)" in plan
    head = out.index(next(l for l in out if l.startswith("experiment ")))
    assert out[head].split() == ["experiment", "question", "variants", "verdict", "estimate", "[95%", "CI]", "against",
                                 "cases×repeats", "attempts", "infra", "spend", "of", "cap"]
    row = out[head + 1].split()
    assert row[:4] == ["rate_ok", "threshold", "bot", "signal"]
    assert re.fullmatch(r"0\.\d\d", row[4]) and re.fullmatch(r"\[0\.\d\d,", row[5])
    assert row[7:12] == ["above", "0.9", "with", "margin", "0.05"]
    assert re.fullmatch(r"\d+×2", row[12]) and row[14] == "0" and row[15].startswith("$") and row[-1] == "$1"
    sentence = out.index(next(l for l in out if l.startswith("rate_ok (dev, ")))
    assert out[sentence + 1].startswith("  next: keep exploring on the working cases")
    # both figures, each labelled: the pre-registered one and the one at the rates this series observed
    assert "; launch plan (closed form, optimistic for these intervals): about " in out[sentence + 1]
    assert "when the truth is one margin past the edge" in out[sentence + 1]
    assert out[sentence + 1].endswith("; at the rates observed so far (label 0.42 over 6 cases, the edge 0.95), no "
                                      "number of cases confirms it: what was observed is not past the edge")
    quiet = pytester.runpytest("proj", "-q", "-p", "no:cacheprovider").outlines
    assert not any(l.startswith("experiment ") for l in quiet) and not any("next:" in l for l in quiet)
    assert any(l.startswith("rate_ok (dev, ") for l in quiet)
    verbose = pytester.runpytest("proj", "-v", "-p", "no:cacheprovider").outlines
    assert any(l.startswith("  primary bot label: ") for l in verbose)
    assert any(re.match(r"  stability bot: \d+ cases always passed, \d+ never, \d+ flaky; pass\^2 [01]\.\d\d", l)
               for l in verbose)


def test_progress_lines_leave_pytests_progress_intact(pytester, xdist):
    """... and show the series' own cap (the experiment's cap_usd: $0.5), not the project's ($1)."""
    make(pytester, projects.cases(100), repeats=3, extra="cap_usd: 0.5\n")  # about 150 attempts: pytest wraps its dots
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-progress=0.000001", *xdist)
    lines = [l for l in result.outlines if l.startswith("aqven: ")]
    assert lines, result.outlines
    for line in lines:
        assert re.fullmatch(r"aqven: \d+/\d+ attempts, \$[\d.]+ of \$0\.5 cap spent, about \d+s left", line), line
    dots = [l for l in result.outlines if re.fullmatch(r"(proj/\S+ )?[.x]+ *\[ *\d+%\]", l)]
    assert dots and all("aqven" not in l for l in dots)
    assert not [l for l in result.outlines if "aqven:" in l and not l.startswith("aqven: ")]
    quiet = pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-cases", "4", *xdist)
    assert not [l for l in quiet.outlines if l.startswith("aqven: ")]     # short runs: no progress line


def test_html_shows_each_working_attempt_escaped_and_a_verdict_section(pytester):
    import html as htmllib

    name = next(n for n in (f"wrong_{i}" for i in range(100)) if split_of(PACKAGE, "reviews", n) == "dev")
    make(pytester, [(name, "<script>alert(1)</script> wrong"), *projects.cases(8)], repeats=1)
    out = pytester.path / "report.html"
    pytester.runpytest("proj", "-p", "no:cacheprovider", f"--html={out}", "--self-contained-html")
    text = out.read_text()
    blob = json.loads(htmllib.unescape(re.search(r'data-jsonblob="([^"]*)"', text).group(1)))
    tests = blob["tests"]
    wrong = tests[f"proj/experiments/rate_ok/experiment.yaml::bot::{name}::1"][0]["log"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; wrong" in wrong and "<script>" not in wrong
    assert "<th>inputs<td>" in wrong and "fields differ from expected_output: label" in wrong
    assert "<th>node<th>kind" in wrong and "<td>judge<td>llm<td>ok" in wrong
    verdict = tests["proj/experiments/rate_ok/experiment.yaml::verdict"][0]["log"]
    assert "verdict signal: Signal on dev, not a finding: bot: label is" in verdict      # a passing verdict's sentence
    section = re.search(r'<section class="aqven-verdict aqven-state-signal" data-experiment="rate_ok">.*?</section>',
                        text, re.S).group(0)
    assert '<svg class="aqven-plot"' in section and 'class="aqven-ci unclear"' in section
    assert "<script>alert" not in text


def test_what_to_do_next_labels_each_figure_and_trusts_no_optimistic_enough():
    from pytest_aqven.report.data import next_step

    observed = {"text": "at the rates observed so far (label 0.80 over 30 cases, the edge 0.62), about 78 cases give "
                        "an 80% chance to confirm (simulated)"}
    enough = {"reason": "enough", "text": "at 26 cases the expected half-width is ±0.02, within the 0.1 margin",
              "observed": observed}
    assert next_step("inconclusive", "below_mde", enough) == (
        "run a new held-out series of the recommended size on fresh cases (never rerun the same cases); "
        + observed["text"])
    wide = {"reason": "wide", "text": "about 90 cases give an 80% chance to confirm when the truth is one margin past "
                                      "the edge", "observed": None}
    assert next_step("signal", "dev_split", wide).endswith(
        "; launch plan: about 90 cases give an 80% chance to confirm when the truth is one margin past the edge")
    assert next_step("confirmed", None, wide) is None and next_step("none", None) is None


def test_the_markdown_summary_has_one_row_per_experiment_and_is_appended(pytester, xdist):
    make(pytester, [(f"c{i:02d}", "wrong") for i in range(40)], repeats=1, above=0.5)
    summary = pytester.path / "step-summary.md"
    summary.write_text("earlier step\n")
    for _ in range(2):
        result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", f"--aqven-summary={summary}",
                                    *xdist)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = summary.read_text()
    assert text.startswith("earlier step\n### aqven verdicts\n") and text.count("### aqven verdicts") == 2
    rows = [l for l in text.splitlines() if l.startswith("| rate_ok |")]
    assert rows[0].split(" | ")[1:] == ["holdout", "**refuted**", "0.00", "[0.00, 0.17]", "above 0.5 with margin 0",
                                        "20/20", "$0.004 of $1 |"]
    # the same command again runs nothing (held-out cases are spent once): the finding that stands
    assert rows[1].split(" | ")[1:] == ["holdout", "**refuted** (the finding that stands)", "-", "-", "-", "0", "- |"]
    assert "- **rate_ok**: bot: label is 0.00 (95% CI 0.00 to 0.17)" in text


def docs_conftest() -> str:
    text = (Path(__file__).parents[2] / "docs/reports.md").read_text()
    start = text.index("An example `conftest.py`")
    return text[text.index("```python\n", start) + 10:text.index("```\n", text.index("```python\n", start) + 10)]


def test_the_documented_conftest_works_with_the_plugin_and_without_it(pytester, xdist):
    make(pytester, projects.cases(8), repeats=1)
    pytester.makeconftest(docs_conftest())
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    assert result.ret == 0
    logged = [json.loads(l) for l in (pytester.path / "verdicts.jsonl").read_text().splitlines()]
    assert [(v["experiment"], v["state"]) for v in logged] == [("rate_ok", "signal")]
    without = pytester.runpytest("test_plain.py", "-p", "no:aqven", "-p", "no:cacheprovider", *xdist)
    assert without.ret == 0, without.outlines          # the optional hooks do not break pytest there
    without.assert_outcomes(passed=1)
