"""Verdicts are collected items: `--co`, node ids, -k, --lf, --ff, --sw see them; a held-out run that decides
nothing fails (`--aqven-fail-on open`); one reporter's failure never costs the other verdicts."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from .. import projects
from ..conftest import XDIST
from .test_plugin import make

VERDICT = "proj/experiments/rate_ok/experiment.yaml::verdict"


def two_projects(pytester):
    """`good` decides a signal on its 7 working cases; `proj` (after it on the command line) is invalid: its 3
    working cases crash."""
    projects.make(pytester.path / "good", 12, experiments=["good_exp"], repeats=1, package="goodproj")
    return make(pytester, projects.cases(12, "crash"), repeats=1)


def test_a_verdict_node_id_runs_as_given_back_and_alone_it_decides_nothing(pytester, xdist):
    make(pytester, projects.cases(8), repeats=1)
    result = pytester.runpytest(VERDICT, "-p", "no:cacheprovider", "-rs", *xdist)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no attempt of rate_ok ran in this session: select its attempts too*"])
    assert result.ret == pytest.ExitCode.OK
    held_out = pytester.runpytest(VERDICT, "--aqven-holdout", "-p", "no:cacheprovider", *xdist)
    held_out.assert_outcomes(failed=1)
    held_out.stdout.fnmatch_lines(["verdict open: no attempt of rate_ok ran in this session*"])


def test_a_held_out_run_that_leaves_its_series_open_fails_unless_open_is_left_out_of_fail_on(pytester, xdist):
    make(pytester, projects.cases(40), repeats=2)
    result = pytester.runpytest("proj", "--aqven-holdout", "-k", "verdict or 1", "-p", "no:cacheprovider", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["verdict open: *the series stays open*", f"FAILED {VERDICT}*"])
    again = pytester.runpytest("proj", "--aqven-holdout", "-k", "verdict or 1", "--aqven-fail-on",
                               "refuted,inconclusive,invalid", "-p", "no:cacheprovider", *xdist)
    assert again.ret == pytest.ExitCode.OK
    again.assert_outcomes(skipped=1, passed=again.parseoutcomes()["passed"])


def test_a_held_out_run_that_leaves_its_verdict_out_decides_nothing_and_fails(pytester, xdist):
    """-k on some attempts, or `not verdict`, under --aqven-holdout: no finding is written and the run fails
    (open), saying what finishes the series; `-k rate_ok` then decides it from the recorded attempts."""
    make(pytester, projects.cases(40), repeats=2)
    findings = pytester.path / "proj/experiments/rate_ok/findings"
    for selection in ("1 and not verdict", "not verdict"):
        result = pytester.runpytest("proj", "--aqven-holdout", "-k", selection, "-p", "no:cacheprovider", *xdist)
        assert result.ret == pytest.ExitCode.TESTS_FAILED, selection
        result.stdout.fnmatch_lines(["rate_ok (holdout): no verdict: its verdict was not selected (* of its attempts "
                                     "ran in this session)*`pytest --aqven-holdout -k rate_ok` finishes it*"])
        assert not findings.exists(), selection
    kept = pytester.runpytest("proj", "--aqven-holdout", "-k", "not verdict", "--aqven-fail-on", "refuted,invalid",
                              "-p", "no:cacheprovider", *xdist)
    assert kept.ret == pytest.ExitCode.OK and not findings.exists()  # open left out of fail_on: the user's choice
    finish = pytester.runpytest("proj", "--aqven-holdout", "-k", "rate_ok", "-p", "no:cacheprovider", *xdist)
    assert finish.ret == pytest.ExitCode.OK
    finish.stdout.fnmatch_lines(["rate_ok series *: 0 attempts ran, * reused*"])
    assert len(list(findings.glob("*.yaml"))) == 1


def test_a_held_out_run_whose_series_paused_for_approval_fails(pytester, xdist):
    make(pytester, projects.cases(40), repeats=1)      # each attempt costs $0.0002: the series pauses at its 3rd
    result = pytester.runpytest("proj", "--aqven-holdout", "--aqven-cap", "0.0005", "-p", "no:cacheprovider", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["verdict open: series * paused near its cap*", f"FAILED {VERDICT}*"])
    working = pytester.runpytest("proj", "--aqven-cap", "0.0005", "-p", "no:cacheprovider", *xdist)
    assert working.ret == pytest.ExitCode.OK        # a working run: open is no failure there


def test_fail_on_knows_open_and_refuses_unknown_words(pytester):
    make(pytester, projects.cases(4), repeats=1)
    result = pytester.runpytest("proj", "--aqven-fail-on", "open,opne")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--aqven-fail-on: unknown verdict opne*"])


def test_stepwise_continues_from_the_experiment_of_the_failed_verdict(pytester):
    two_projects(pytester)
    first = pytester.runpytest("good", "proj", "--sw")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    first.stdout.fnmatch_lines([f"FAILED {VERDICT}*"])
    again = pytester.runpytest("good", "proj", "--sw", "-v")
    again.stdout.fnmatch_lines(["*skipping 8 already passed items*"])      # good's 7 attempts and its verdict
    assert not [l for l in again.outlines if l.startswith("good/")]
    again.stdout.fnmatch_lines([f"{VERDICT} FAILED*"])
    assert again.ret == pytest.ExitCode.TESTS_FAILED


def test_failed_first_runs_the_failed_experiment_first(pytester):
    two_projects(pytester)
    assert pytester.runpytest("good", "proj").ret == pytest.ExitCode.TESTS_FAILED
    again = pytester.runpytest("good", "proj", "--ff", "-v", "-p", "no:randomly")
    ran = [l.split("::")[0] for l in again.outlines if "::" in l and (" PASSED" in l or " SKIPPED" in l
                                                                      or " FAILED" in l or " XFAIL" in l)]
    assert [r.split("/")[0] for r in ran] == ["proj"] * 3 + ["good"] * 7 + ["good", "proj"]   # verdicts last


DIST_MODES = ("load", "loadscope", "loadfile", "loadgroup", "worksteal")
XDIST_ALL = {"no-xdist": [], **{dist: [*XDIST["n2"], "--dist", dist] for dist in DIST_MODES}, "auto": ["-n", "auto"],
             "worksteal-concurrency-4": [*XDIST["n2"], "--dist", "worksteal", "--aqven-concurrency", "4"]}


@pytest.mark.parametrize("xdist", XDIST_ALL.values(), ids=XDIST_ALL.keys())
@pytest.mark.slow
def test_every_distribution_mode_reports_each_verdict_once_with_the_same_outcome(pytester, xdist):
    two_projects(pytester)
    result = pytester.runpytest_subprocess("good", "proj", "-p", "no:cacheprovider", "-rA", *xdist, timeout=120)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    verdicts = sorted(l for l in result.outlines if l.endswith(("::verdict", "verdict invalid")) or "::verdict " in l
                      and l.startswith(("PASSED", "FAILED")))
    assert [v.split(" - ")[0] for v in verdicts] == [
        f"FAILED {VERDICT}", "PASSED good/experiments/good_exp/experiment.yaml::verdict"]
    result.assert_outcomes(passed=8, skipped=3, failed=1)


RAISES_ON_THE_FIRST_VERDICT = '''
seen = []

def pytest_runtest_logreport(report):
    if report.nodeid.endswith("::verdict") and report.when == "call":
        seen.append(report.nodeid)
        if len(seen) == 1:
            raise RuntimeError("a reporter's own bug")
'''


def test_a_reporter_that_raises_on_one_verdict_costs_none_of_the_others(pytester, xdist):
    two_projects(pytester)
    pytester.makeconftest(RAISES_ON_THE_FIRST_VERDICT)
    result = pytester.runpytest("good", "proj", "--junitxml=out.xml", "--aqven-json=out.json", "-p",
                                "no:cacheprovider", *xdist)
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR       # the other plugin's bug shows, after everything
    result.stdout.fnmatch_lines(["*RuntimeError: a reporter's own bug*"])
    names = [c.get("name") for c in ET.parse(pytester.path / "out.xml").iter("testcase")]
    assert names.count("good_exp::verdict") == 1 and names.count("rate_ok::verdict") == 1
    series = json.loads((pytester.path / "out.json").read_text())["series"]
    assert sorted(s["experiment"] for s in series) == ["good_exp", "rate_ok"]


@pytest.mark.parametrize("table", ["tool.pytest.ini_options", "tool.pytest"])
def test_ini_options_are_typed_in_toml(pytester, table):
    if table == "tool.pytest" and pytest.version_tuple < (9,):
        pytest.skip("native [tool.pytest] tables are pytest 9's")
    make(pytester, [(f"c{i:02d}", "wrong") for i in range(40)], repeats=1, above=0.5)
    pytester.makefile(".toml", pyproject=f'''
        [{table}]
        aqven_fail_on = ["invalid", "open"]
        aqven_concurrency = 2
        aqven_progress = 0.5
        aqven_json = "out.json"
        ''')
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.outlines      # refuted is not in this fail_on
    assert json.loads((pytester.path / "out.json").read_text())["series"][0]["verdict"]["state"] == "refuted"
    assert pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider", "--aqven-fail-on",
                              "refuted").ret == pytest.ExitCode.TESTS_FAILED      # the command line wins


def test_ini_values_are_checked_with_a_usage_error(pytester):
    make(pytester, projects.cases(4), repeats=1)
    for key, value, says in (("aqven_concurrency", "many", "many"),
                             ("aqven_intervals", "wide", "aqven_intervals (ini): 'wide' is neither"),
                             ("aqven_fail_on", "refuted, wrong", "aqven_fail_on (ini): unknown verdict wrong*"),
                             ("aqven_concurrency", "2000", "aqven_concurrency (ini) must be between 1 and 1024, "
                                                          "not 2000"),
                             ("aqven_cassettes", "live", "aqven_cassettes (ini): 'live'"),
                             # ours names the key; pytest 9.2 checks a bool ini value itself, naming only the value
                             ("aqven_stop_early", "maybe", "maybe")):
        pytester.makeini(f"[pytest]\n{key} = {value}\n")
        result = pytester.runpytest("proj", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, key
        result.stderr.fnmatch_lines([f"*{says}*"])


def test_an_ini_value_of_the_wrong_toml_type_is_a_usage_error_naming_the_key(pytester):
    if pytest.version_tuple < (9,):
        pytest.skip("native [tool.pytest] tables, whose values pytest types strictly, are pytest 9's")
    make(pytester, projects.cases(4), repeats=1)
    for key, value in (("aqven_fail_on", "3"), ("aqven_cassettes", "5"), ("aqven_store", "[]"), ("aqven_json", "3")):
        pytester.makefile(".toml", pyproject=f"[tool.pytest]\n{key} = {value}\n")
        result = pytester.runpytest("proj", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, key
        # ours, or pytest's own from 9.2 on (it checks a native table's types itself): both name the key and value
        result.stderr.fnmatch_lines([f"ERROR: *{key}*{value}*"])
