"""Whole runs: inputs changed mid-series (even when changed back), a crash between any two writes of
a finding, and the checks at collection."""
from __future__ import annotations

import textwrap

import pytest
import yaml

from pytest_aqven.api.check import check_root

from .. import projects

PACKAGE = "runsproj"

# counts its calls in calls.log beside the project; edits a file and restores it on the first call
# when EDIT names one (relative to the project root, or absolute)
COUNTING = projects.PROVIDER + '''
import os
from pathlib import Path

_answer = complete
_edited = []


def complete(request):
    root = Path(__file__).parent
    with open(root.parent / "calls.log", "a") as log:
        log.write("call\\n")
    target = os.environ.get("EDIT")
    if target and not _edited:
        _edited.append(target)
        path = root / target
        text = path.read_text()
        path.write_text(text + "# edited\\n")
        path.write_text(text)   # and changed back
    return _answer(request)
'''


def make(root, n=24, repeats=1, provider=COUNTING, extra_files=None):
    return projects.make(root, n, repeats=repeats, above=0.5, package=PACKAGE,
                         files={"provider.py": provider, **(extra_files or {})})


def calls(root) -> int:
    log = root.parent / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def verdict_line(result) -> str:
    lines = [l for l in result.outlines if l.startswith("rate_ok (")]
    assert len(lines) == 1, result.outlines
    return lines[0]


def findings(root):
    return sorted((root / "experiments/rate_ok/findings").glob("*.yaml"))


def test_a_prompt_edited_and_restored_mid_series_makes_the_verdict_invalid(pytester, monkeypatch):
    root = make(pytester.path / "proj")
    monkeypatch.setenv("EDIT", "flows/rate/nodes/judge/judge.prompt.md")
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert "invalid - No finding: inputs changed during the series" in verdict_line(result)
    assert findings(root) == [] and result.ret == pytest.ExitCode.TESTS_FAILED
    monkeypatch.delenv("EDIT")
    again = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert "confirmed - " in verdict_line(again)


OUTSIDE_PROVIDER = '''
import os
from pathlib import Path

import outside_helper


def complete(request):
    if os.environ.get("EDIT_OUTSIDE") and not outside_helper.EDITED:
        outside_helper.EDITED.append(1)
        path = Path(outside_helper.__file__)
        text = path.read_text()
        path.write_text(text + "# edited\\n")
        path.write_text(text)
    return outside_helper.answer(request)
'''


def test_a_module_outside_the_project_is_an_input_and_its_change_mid_series_invalidates(pytester, monkeypatch):
    outside = pytester.path / "elsewhere"
    outside.mkdir()
    (outside / "outside_provider.py").write_text(OUTSIDE_PROVIDER)
    (outside / "outside_helper.py").write_text(textwrap.dedent(projects.PROVIDER).replace("def complete", "def answer")
                                               + "\nEDITED = []\n")
    monkeypatch.syspath_prepend(str(outside))
    root = make(pytester.path / "proj")
    aqven_yaml = root / "aqven.yaml"
    aqven_yaml.write_text(aqven_yaml.read_text().replace('"@root.provider:complete"', '"outside_provider:complete"'))
    result = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert "confirmed - " in verdict_line(result), result.outlines
    inputs = yaml.safe_load(findings(root)[0].read_text())["inputs"]
    assert inputs["modules"] == sorted(str((outside / n).resolve()) for n in ("outside_helper.py", "outside_provider.py"))
    monkeypatch.setenv("EDIT_OUTSIDE", "1")      # the same cases again, on purpose (they are spent)
    changed = pytester.runpytest("proj", "--aqven-holdout", "--aqven-respend-holdout", "-p", "no:cacheprovider")
    assert "invalid - No finding: inputs changed during the series" in verdict_line(changed)
    assert len(findings(root)) == 1


CRASH_CONFTEST = '''
import os
import signal

import pytest_aqven.findings.publish as published

POINT = os.environ.get("CRASH_AT")


def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


def wrap(name, before):
    real = getattr(published, name)

    def crashing(*args, **kwargs):
        if before:
            die()
        out = real(*args, **kwargs)
        die()
        return out
    setattr(published, name, crashing)


if POINT == "before_recording":          # the attempts are saved, the verdict not recorded
    wrap("record", before=True)
elif POINT == "before_finding_file":     # recorded (series done, finding in the database), no file yet
    wrap("write_finding_file", before=True)
elif POINT == "before_findings_md":      # the finding file written, FINDINGS.md not regenerated
    wrap("refresh_findings_md", before=True)
elif POINT == "after_findings_md":       # both files written, the database not told
    wrap("refresh_findings_md", before=False)
'''


@pytest.mark.parametrize("point", ["before_recording", "before_finding_file", "before_findings_md",
                                   "after_findings_md"])
@pytest.mark.slow
def test_a_kill_between_any_two_writes_is_repaired_by_the_rerun_without_running_attempts(pytester, monkeypatch,
                                                                                         point):
    root = make(pytester.path / "proj")
    pytester.makeconftest(CRASH_CONFTEST)
    monkeypatch.setenv("CRASH_AT", point)
    crashed = pytester.runpytest_subprocess("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    monkeypatch.delenv("CRASH_AT")
    assert crashed.ret not in (0, 1), crashed.outlines      # killed
    ran = calls(root)
    assert ran > 0
    rerun = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")     # in-process: no crash now
    assert calls(root) == ran, "the rerun ran attempts again"
    assert "confirmed - " in verdict_line(rerun) and rerun.ret == 0
    assert len(findings(root)) == 1
    assert [d.render() for d in check_root(root)] == []
    md = (root / "FINDINGS.md").read_text()
    assert md.count("**confirmed** `rate_ok`") == 1 and findings(root)[0].name in md
    # and the next run runs nothing: the held-out cases are spent, the repaired finding stands
    third = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert calls(root) == ran and len(findings(root)) == 1 and third.ret == 0
    assert "rate_ok (holdout, nothing ran): confirmed - " in verdict_line(third)


def test_finding_diagnostics_at_collection(pytester):
    root = make(pytester.path / "proj")
    first = pytester.runpytest("proj", "--aqven-holdout", "-p", "no:cacheprovider")
    assert first.ret == 0
    md = root / "FINDINGS.md"
    md.write_text(md.read_text() + "- a line written by hand\n")
    stale = pytester.runpytest("proj", "--collect-only", "-p", "no:cacheprovider")
    stale.stdout.fnmatch_lines(["*aqven check warnings*", "FINDINGS.md:*: warning W_FINDINGS_STALE*",
                                "  hint: run aqven findings rebuild*"])
    finding = findings(root)[0]
    finding.write_text(finding.read_text().replace('state: "confirmed"', 'state: "refuted"'))
    tampered = pytester.runpytest("proj", "--collect-only", "-p", "no:cacheprovider")
    tampered.stdout.fnmatch_lines([f"*experiments/rate_ok/findings/{finding.name}:*: error E_FINDING_TAMPERED*"])
    assert tampered.ret != 0
