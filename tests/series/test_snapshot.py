"""The inputs as the series saw them: read once at its start, attempts run from that snapshot, an edit
while it runs (even undone) makes the verdict invalid, and a later series records what it ran."""
from __future__ import annotations

import asyncio
import json
import os
import textwrap
import time

import pytest
import yaml

from pytest_aqven.experiments import plan as planning
from pytest_aqven.experiments.attempt import run_attempt
from pytest_aqven.findings.spent import spent
from pytest_aqven.project.loader import load_project
from pytest_aqven.series.lifecycle import SeriesRun

from .. import findings_util, projects

PACKAGE = "snapproj"
PROMPT = "flows/rate/nodes/judge/judge.prompt.md"

# logs the messages of every call in calls.jsonl beside the project; EDITS = {"<call number>": {"<file>":
# "<text>"}} rewrites project files once the run made that many calls (once across xdist workers)
RECORDING = projects.PROVIDER + '''
import json
import os
from pathlib import Path

_answer = complete


def _once(name):
    try:
        os.close(os.open(str(Path(__file__).parent.parent / name), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def complete(request):
    root = Path(__file__).parent
    log = root.parent / "calls.jsonl"
    with open(log, "a") as f:
        f.write(json.dumps([m.content for m in request.messages]) + "\\n")
    calls = len(log.read_text().splitlines())
    for at, files in json.loads(os.environ.get("EDITS", "{}")).items():
        if calls >= int(at) and _once(f"edit-{at}.done"):
            for rel, text in files.items():
                (root / rel).write_text(text)
    return _answer(request)
'''

LIQUID_PROMPT = ('ORIGINAL-PROMPT rate the sentiment. {% include "fragments/tone" %}\n'
                 'Review: {{ text }}\n{{ output_format }}\n')
AGENT = '''
apiVersion: "aqven/v1"
kind: "Agent"
description: "The test model"
model: "fake:bot-1"
instructions: "./bot.md"
'''
EDITED = {PROMPT: 'EDITED-PROMPT {% include "fragments/tone" %} {{ text }}\n{{ output_format }}\n', "fragments/tone.md": "EDITED-TONE",
          "agents/bot.md": "EDITED-INSTRUCTIONS"}
ORIGINAL = {PROMPT: LIQUID_PROMPT, "fragments/tone.md": "ORIGINAL-TONE", "agents/bot.md": "ORIGINAL-INSTRUCTIONS"}


def make(root, n=30):
    return projects.make(root, n, repeats=1, above=0.5, package=PACKAGE,
                         files={"provider.py": RECORDING, "agents/bot.yaml": AGENT, **ORIGINAL})


def received(root) -> list[str]:
    """Each call's messages, joined."""
    log = root.parent / "calls.jsonl"
    out = [" | ".join(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return out


def verdict_line(result) -> str:
    lines = [line for line in result.outlines if line.startswith("rate_ok (")]
    assert len(lines) == 1, result.outlines
    return lines[0]


def ran_the_original(calls: list[str]) -> bool:
    return all("ORIGINAL-PROMPT" in c and "ORIGINAL-TONE" in c and "ORIGINAL-INSTRUCTIONS" in c
               and "EDITED" not in c for c in calls)


@pytest.mark.slow
def test_an_edit_mid_series_never_reaches_an_attempt_and_makes_the_verdict_invalid(pytester, monkeypatch, xdist):
    root = make(pytester.path / "proj")
    # prompt, fragment and the agent's instructions rewritten after the 3rd call: later attempts still run
    # the texts read at the series start
    monkeypatch.setenv("EDITS", json.dumps({"3": EDITED}))
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    calls = received(root)
    assert len(calls) >= 3 and ran_the_original(calls), calls    # -n 2: a worker starting after the edit calls none
    # the sentence names the files that changed, relative to the module root
    assert (f"invalid - No finding: inputs changed during the series: {', '.join(sorted(EDITED, key=lambda p: str(root / p)))} "
            "(the working tree no longer matches the snapshot taken at the start)") in verdict_line(result)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # the next series runs the edited files, and says it ran them
    monkeypatch.delenv("EDITS")
    again = pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    calls = received(root)
    assert len(calls) >= 10 and all("EDITED-PROMPT" in c and "EDITED-TONE" in c and "EDITED-INSTRUCTIONS" in c
                                    for c in calls), calls
    assert "signal - " in verdict_line(again)


def test_an_edit_restored_before_the_end_still_makes_the_verdict_invalid(pytester, monkeypatch):
    root = make(pytester.path / "proj")
    monkeypatch.setenv("EDITS", json.dumps({"3": EDITED, "6": ORIGINAL}))
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    calls = received(root)
    assert len(calls) >= 10 and ran_the_original(calls), calls
    assert (root / PROMPT).read_text() == LIQUID_PROMPT          # restored: the content is the same again
    assert "invalid - No finding: inputs changed during the series" in verdict_line(result)


def test_a_later_series_records_exactly_what_it_ran(pytester, monkeypatch):
    root = make(pytester.path / "proj")
    monkeypatch.setenv("EDITS", json.dumps({"2": EDITED}))
    first = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert "invalid - " in verdict_line(first)
    assert not list((root / "experiments/rate_ok/findings").glob("*.yaml"))
    monkeypatch.delenv("EDITS")
    received(root)
    second = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert "confirmed - " in verdict_line(second)
    assert all("EDITED-PROMPT" in c for c in received(root))
    [finding] = (root / "experiments/rate_ok/findings").glob("*.yaml")
    project = load_project(root)
    run = SeriesRun(project, project.experiments["rate_ok"], "holdout", spent=spent(project, project.experiments["rate_ok"]))
    assert yaml.safe_load(finding.read_text())["inputs"] == planning.snapshot(project, run.plan)


OUTSIDE_PROVIDER = '''
import os
from pathlib import Path

import outside_helper


def complete(request):
    log = Path(os.environ["CALLS_LOG"])
    with open(log, "a") as f:
        f.write("call\\n")
    if os.environ.get("EDIT_OUTSIDE") and len(log.read_text().splitlines()) == 3:
        path = Path(outside_helper.__file__)
        path.write_text(path.read_text().replace('label = "positive"', 'label = "negative"  # edited'))
    return outside_helper.answer(request)
'''


def test_a_module_outside_the_project_changed_mid_series_runs_as_imported_and_invalidates(pytester, monkeypatch):
    outside = pytester.path / "elsewhere"
    outside.mkdir()
    (outside / "outside_provider.py").write_text(OUTSIDE_PROVIDER)
    (outside / "outside_helper.py").write_text(textwrap.dedent(projects.PROVIDER).replace("def complete", "def answer"))
    monkeypatch.syspath_prepend(str(outside))
    monkeypatch.setenv("CALLS_LOG", str(pytester.path / "calls.log"))
    root = projects.make(pytester, 12, repeats=1, package=PACKAGE)
    aqven_yaml = root / "aqven.yaml"
    aqven_yaml.write_text(aqven_yaml.read_text().replace('"@root.provider:complete"', '"outside_provider:complete"'))
    monkeypatch.setenv("EDIT_OUTSIDE", "1")
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    # the code imported at the start answers every attempt: the edit (answer negative) reaches none of them
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] >= 5 and outcomes["failed"] == 1 and "xfailed" not in outcomes, outcomes
    assert "invalid - No finding: inputs changed during the series" in verdict_line(result)
    monkeypatch.delenv("EDIT_OUTSIDE")
    again = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    [finding] = (root / "experiments/rate_ok/findings").glob("*.yaml")
    helper = (outside / "outside_helper.py").resolve()
    inputs = yaml.safe_load(finding.read_text())["inputs"]
    assert str(helper) in inputs["modules"] and "negative" in helper.read_text()
    project = load_project(root)
    rate_ok = project.experiments["rate_ok"]
    assert inputs == planning.snapshot(project, SeriesRun(project, rate_ok, "holdout", spent=spent(project, rate_ok)).plan)
    assert "label is 0.00" in verdict_line(again)      # the edited helper answered the later series


def _attempts(run: SeriesRun, series_id: str) -> list:
    async def all_of_them():
        return [await run_attempt(run.project, run.plan, run.checks, run.providers, variant, case, 1, series_id)
                for variant in run.plan.variants for case in run.plan.cases]
    return asyncio.run(all_of_them())


def test_a_process_whose_inputs_differ_from_the_series_joins_it_and_its_attempts_say_inputs_changed(tmp_path):
    """Two processes of one run (xdist workers): the second reads its snapshot after an edit."""
    root = make(tmp_path / "proj", n=12)
    p = load_project(root)
    first = SeriesRun(p, p.experiments["rate_ok"], "dev", run="run-1")
    series_id = first.series_id
    assert first.plan.sources.conflict is None
    (root / PROMPT).write_text(EDITED[PROMPT])
    q = load_project(root)
    second = SeriesRun(q, q.experiments["rate_ok"], "dev", run="run-1")
    assert second.series_id == series_id                    # joined, not a series of its own
    assert "flows_sha256" in second.plan.sources.conflict
    other_run = SeriesRun(q, q.experiments["rate_ok"], "dev", run="run-2")
    assert other_run.series_id != series_id                 # a later run on other inputs: another series
    records = _attempts(first, series_id)[:3] + _attempts(second, series_id)[3:]
    assert all(r.outcome == "ok" for r in records[:3]) and ran_the_original(received(root))
    assert {(r.outcome, r.error_code) for r in records[3:]} == {("infra_error", "inputs_changed")}
    assert "inputs changed while the series ran" in records[3].error_message
    for store in (first.store, second.store, other_run.store):
        store.close()
    (root / PROMPT).write_text(LIQUID_PROMPT)                # even with the file back as it was
    conclusion = findings_util.concluded(root, series_id, records)
    assert conclusion.verdict.reason == "inputs_changed"


def test_a_yaml_file_edited_after_loading_and_before_the_series_start_is_caught(tmp_path):
    """The specs were parsed at load time: a dataset edited before the series starts is not what it hashes."""
    root = make(tmp_path / "proj", n=4)
    project = load_project(root)
    run = SeriesRun(project, project.experiments["rate_ok"], "dev", run="run-1")
    dataset = root / "datasets/reviews.yaml"
    dataset.write_text(dataset.read_text().replace("fine", "wrong"))
    os.utime(dataset, ns=(time.time_ns(), time.time_ns()))    # after the load, whatever the clock's tick
    series_id = run.series_id
    assert "datasets/reviews.yaml" in run.plan.sources.conflict
    records = _attempts(run, series_id)
    run.store.close()
    assert {r.error_code for r in records} == {"inputs_changed"} and received(root) == []
    assert findings_util.concluded(root, series_id, records).verdict.reason == "inputs_changed"
