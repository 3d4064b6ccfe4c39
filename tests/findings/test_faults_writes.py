"""Write failures and edits between runs: a full disk at the finding write keeps the verdict, removes its
temporary files and says what publishes the recorded finding; an unwritable findings folder stops a held-out
run before anything is spent; a dataset edit closes the series it invalidates, saying so; inputs are compared
by content (a file restored with its old mtime, `cp -p`, is caught)."""
from __future__ import annotations

import os
import subprocess

import pytest

from pytest_aqven.experiments import inputs, plan as planning
from pytest_aqven.project.loader import load_project

from .. import faults, projects

HOLDOUT = "--aqven-holdout"
DISK_FULL = faults.DISK_FULL


def leftovers(root):
    return [p for p in root.rglob("*.tmp")]


@pytest.mark.slow
def test_a_full_disk_at_the_finding_write_keeps_the_verdict_and_the_same_command_publishes_it(tmp_path, xdist):
    root = faults.make(tmp_path, cases=24, files={"conftest.py": DISK_FULL})
    planned = faults.attempts_planned(root)
    full = faults.run(tmp_path, HOLDOUT, *xdist, env={"FAULT_DISK_FULL": "1"})
    out = full.stdout
    assert full.returncode == 1 and f"rate_ok (holdout, {planned}/{planned} attempts): confirmed" in out, out
    assert "the finding is recorded in the project database but its files were not written" in out
    assert "No space left on device: experiments/rate_ok/findings. Free space on that disk" in out
    assert "run the same command: it publishes the recorded finding; no attempt runs again" in out
    assert leftovers(root) == [] and faults.finding_files(root) == [] and "Traceback" not in out
    again = faults.run(tmp_path, HOLDOUT, *xdist)
    assert again.returncode == 0 and len(faults.calls(root)) == planned, again.stdout
    assert "rate_ok (holdout, nothing ran): confirmed" in again.stdout
    assert len(faults.finding_files(root)) == 1 and (root / "FINDINGS.md").exists()
    assert faults.aqven(tmp_path, "check", "proj").returncode == 0


def _immutable(path):
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")


def test_an_unwritable_findings_folder_stops_a_held_out_run_before_anything_is_spent(pytester):
    root = faults.make(pytester.path, cases=24)
    folder = root / "experiments" / "rate_ok"
    _immutable(folder)
    try:
        held_out = pytester.runpytest("proj", "-p", "no:cacheprovider", HOLDOUT)
        paid = len(faults.calls(root))
        working = pytester.runpytest("proj", "-p", "no:cacheprovider")       # no finding to write: it runs
    finally:
        subprocess.run(["chattr", "-i", str(folder)])
    text = held_out.stderr.str() + held_out.stdout.str()
    assert held_out.ret == pytest.ExitCode.USAGE_ERROR and text.count("pytest-aqven:") == 1, text
    assert f"cannot write in {folder} (Operation not permitted). A held-out run writes its findings there" in text
    assert paid == 0 and "Traceback" not in text
    assert working.ret == 0 and [s["split"] for s in faults.series(root)] == ["dev"]


@pytest.mark.slow
def test_a_dataset_edit_between_a_killed_run_and_its_rerun_closes_the_old_series_saying_so(tmp_path):
    root = faults.make(tmp_path, cases=24, gate=6, sleep=0.02)
    faults.kill_mid_series(tmp_path, root, 6, "--aqven-concurrency", "2")
    (old,) = faults.series(root)
    faults.add_cases(root, ["added"])
    rerun = faults.run(tmp_path, "--aqven-concurrency", "2")
    assert rerun.returncode == 0, rerun.stdout
    closed, new = faults.series(root)
    assert closed["series_id"] == old["series_id"] and closed["status"] == "cancelled"
    assert closed["verdict"]["reason"] == "inputs_changed"
    assert "its inputs changed since it started (datasets/reviews.yaml)" in closed["verdict"]["text"]
    assert new["status"] == "done" and new["closed"] == [{"series": old["series_id"], "changed": ["datasets/reviews.yaml"]}]
    assert f"closed series {old['series_id']}: its inputs changed since it started (datasets/reviews.yaml)" in rerun.stdout
    assert "so it can never be continued; its verdict is invalid (inputs_changed)" in rerun.stdout


def test_a_yaml_file_replaced_with_its_old_mtime_before_the_series_starts_is_stale(tmp_path):
    """The loader parsed one content, the series start reads another with the same size and mtime (`cp -p`):
    the content, not the mtime, decides."""
    root = projects.make(tmp_path, 8)
    data = root / "datasets" / "reviews.yaml"
    stat = data.stat()
    project = load_project(root)
    data.write_text(data.read_text().replace("positive", "negative"))
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert data.stat().st_size == stat.st_size and data.stat().st_mtime_ns == stat.st_mtime_ns
    taken = planning.take(project, planning.plan(project, project.experiments["rate_ok"], "dev"))
    assert taken.stale == ["datasets/reviews.yaml"]


def test_a_file_restored_with_its_old_mtime_is_seen_touched(tmp_path):
    prompt = tmp_path / "judge.prompt.md"
    prompt.write_text("Rate it.\n")
    marks = inputs.fingerprint([str(prompt)])
    stat = prompt.stat()
    prompt.write_text("Grad it.\n")
    prompt.write_text("Rate it.\n")                        # the same content again
    os.utime(prompt, ns=(stat.st_atime_ns, stat.st_mtime_ns))   # and its old mtime, as cp -p sets it
    assert inputs.changed(marks) == [str(prompt)]
    assert inputs.changed({str(prompt): marks[str(prompt)][:2]}) == []   # an older series: mtime and size only
