"""--aqven-stop-early: a series stops as soon as the betting bound decides its verdict. The attempts it did not
start are skipped with one line and never call the provider (the counting provider of tests/faults.py); the
finding says where it stopped and `aqven check` decides it again; held-out cases no attempt reached stay unspent."""
from __future__ import annotations

import json

import pytest
import yaml

from pytest_aqven.findings.spent import spent
from pytest_aqven.project.loader import load_project

from .. import faults

STOP = ("--aqven-holdout", "--aqven-stop-early")
DECIDED = "decided after 10 of 112 cases: series {} is {} on the betting bound; its other attempts do not run"


def _run(pytester, *args: str):
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-q", "-rs", "--aqven-json=report.json", *args)
    (entry,) = json.loads((pytester.path / "report.json").read_text())["series"]
    return result, entry


def _finding(root):
    (path,) = faults.finding_files(root)
    return yaml.safe_load(path.read_text())


def _reached(root) -> set[str]:
    return {line.split("|")[2] for line in faults.calls(root)}


@pytest.mark.slow
def test_a_decided_series_stops_and_the_rest_never_runs(pytester, xdist):
    root = faults.make(pytester.path, cases=200, repeats=2)
    planned = faults.attempts_planned(root)
    result, entry = _run(pytester, *STOP, *xdist)
    out = result.stdout.str()
    series_id = entry["series_id"]
    assert DECIDED.format(series_id, "confirmed") in out
    assert entry["verdict"]["state"] == "confirmed"
    calls = faults.calls(root)
    if not xdist:       # one attempt at a time: exactly the ten cases decided on ran, nothing after the stop
        assert len(calls) == 20
    assert 20 <= len(calls) < planned / 2 and len(set(calls)) == len(calls)
    finding = _finding(root)
    assert finding["method"]["stop_early"] == {"cases": 10, "planned": 112, "bound": "betting"}
    assert "stopped early after 10 of 112 cases, decided on the betting bound" in finding["statement"]
    assert finding["scope"]["attempts"] == 20 and finding["cells"][0]["decided_by"] == "betting"
    check = faults.aqven(root, "check")
    assert check.returncode == 0, check.stdout + check.stderr
    # the held-out cases no attempt reached are not spent; those reached are, decided on or not
    project = load_project(root)
    used = spent(project, project.runnable_experiment("rate_ok"))
    assert used.names == _reached(root) and len(finding["scope"]["case_keys"]) == len(_reached(root))
    cases = faults.aqven(root, "cases", "rate_ok")
    assert f"held-out cases spent by findings: {len(_reached(root))}; unspent: {112 - len(_reached(root))}" \
        in cases.stdout


def test_a_new_held_out_series_runs_only_the_cases_the_stopped_one_did_not_reach(pytester):
    root = faults.make(pytester.path, cases=200, repeats=2)
    _run(pytester, *STOP)
    first = _reached(root)
    _, entry = _run(pytester, "--aqven-holdout", "--aqven-new-series")
    second = _reached(root) - first
    assert entry["verdict"]["state"] == "confirmed" and len(second) == 112 - len(first)
    assert len(faults.calls(root)) == 2 * 112


def test_a_refuted_series_stops_too(pytester):
    root = faults.make(pytester.path, cases=200, repeats=2, answer='{"label": "negative"}')
    result, entry = _run(pytester, *STOP)
    assert entry["verdict"]["state"] == "refuted"
    assert "on the betting bound; its other attempts do not run" in result.stdout.str()
    assert len(faults.calls(root)) < 112


def test_a_question_that_cannot_stop_runs_its_planned_cases_and_says_why(pytester, xdist):
    root = faults.make(pytester.path, cases=40, repeats=1)
    pytester.makeini("[pytest]\naqven_stop_early = true\n")      # the ini option, as the command line's
    result, entry = _run(pytester, "--aqven-holdout", "--aqven-intervals=model", *xdist)
    assert len(faults.calls(root)) == faults.attempts_planned(root)
    assert f"rate_ok series {entry['series_id']} runs to its planned cases: it cannot stop early: the model " \
           "family's verdict does not rest on the distribution-free bound" in result.stdout.str()
    assert "stop_early" not in _finding(root)["method"]


PAIR = {
    "agents/bot2.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Agent"
        description: "The other test model"
        model: "fake:bot-2"
        ''',
    "experiments/rate_ok/experiment.yaml": '''
        apiVersion: "aqven/v1"
        kind: "Experiment"
        description: "The second model labels reviews no worse than the first"
        failure_mode: "mislabel"
        subject:
          flow: "rate"
        varies:
          what: "agent"
          nodes: ["judge"]
        cases:
          dataset: "reviews"
        variants:
        - id: "bot"
        - id: "bot2"
          nodes:
            judge: "bot2"
        checks:
        - id: "label"
          kind: "binary"
          use: "expected"
        question:
          kind: "noninferior"
          baseline: "bot"
          candidate: "bot2"
          primary: "label"
          margin: 0.1
        plan:
          repeats: 1
        ''',
}


def test_a_pair_runs_its_cases_with_both_variants_together_and_stops(pytester, xdist):
    root = faults.make(pytester.path, cases=200, files=PAIR)
    result, entry = _run(pytester, *STOP, *xdist)
    assert entry["verdict"]["state"] == "confirmed"
    decided = int(entry["verdict"]["sentence"].split("stopped early after ")[1].split(" of ")[0])
    calls = [line.split("|") for line in faults.calls(root)]
    if not xdist:       # case by case, both variants of a case together: the decided prefix and nothing more
        assert len(calls) == 2 * decided
        assert [c[1] for c in calls] == ["bot", "bot2"] * decided
    assert len({c[2] for c in calls}) < 112


def test_a_series_stopped_early_reads_stopped_not_awaiting_approval():
    """Paused in the store until it is decided, a series stopped early waits for no person."""
    from pytest_aqven.series.ledger import status_text
    decided = {"status": "awaiting_approval", "pause": {"reason": "decided", "cases": 3, "planned": 9}}
    assert status_text(decided) == "stopped"
    assert status_text({"status": "awaiting_approval", "pause": {"reason": "spend_near_cap"}}) == "awaiting_approval"


def test_a_long_series_looks_at_most_200_times(monkeypatch):
    """Each look scores its whole prefix: a look after every one of 10,000 cases would be quadratic. Below 400
    planned cases every complete case is looked at; beyond, every planned/200."""
    from types import SimpleNamespace

    from pytest_aqven.series import stopping
    from pytest_aqven.stats import early

    monkeypatch.setattr(early, "decided", lambda *args: None)
    for planned, looks in [(300, 299), (10_000, 200)]:
        watch = object.__new__(stopping._Watch)
        watch.names, watch.variants, watch.repeats = [f"c{i}" for i in range(planned)], ["v"], 1
        watch.facts, watch.question, watch.complete, watch.due = SimpleNamespace(salt="", check_kinds={}), None, 0, 1
        tables: list[int] = []
        tally = SimpleNamespace(cases={}, table=lambda salt, kinds, prefix, tables=tables: tables.append(len(prefix)))
        for name in watch.names:            # one record a case, each completing the next case of the order
            tally.cases[("v", name)] = SimpleNamespace(seen=0b10)
            assert watch.look(tally) is None
        assert len(tables) == looks and tables == sorted(tables), (planned, len(tables))
