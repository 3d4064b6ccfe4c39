"""Held-out cases are spent once, across every recovery path: the same command again, `--lf`, `--sw`, a kill
between two experiments' decisions, an xdist worker killed mid-series, a fresh clone with committed findings
and no database, a database set aside. A held-out case that gave a finding never runs again: the run reports
the finding that stands and says how to get fresh cases; `--aqven-new-series` runs only fresh ones and
`--aqven-respend-holdout` the spent ones again, recorded in the new finding."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from pytest_aqven.experiments.split import split_of
from pytest_aqven.findings.spent import spent
from pytest_aqven.project.loader import load_project
from pytest_aqven.series.lifecycle import SeriesRun
from pytest_aqven.stats.model import experiment_salt

from .. import faults
from ..conftest import XDIST

HOLDOUT = "--aqven-holdout"
KILL_AT_VERDICT = faults.KILL_AT_VERDICT


def two_experiments(tmp_path, **kw):
    root = faults.make(tmp_path, cases=24, experiments=("rate_a", "rate_b"), **kw)
    return root, faults.attempts_planned(root)


def per_experiment(root) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in faults.series(root, "holdout"):
        out[s["experiment"]] = out.get(s["experiment"], 0) + 1
    return out


def assert_spent_once(root, planned):
    """Every held-out attempt paid and counted once, one series and one finding per experiment."""
    assert faults.ledger_rows(root) == faults.finished(root) == planned
    assert set(per_experiment(root).values()) == {1}
    assert len(faults.finding_files(root)) == len(per_experiment(root))


@pytest.mark.slow
def test_the_same_command_again_reports_the_finding_that_stands_and_runs_nothing(tmp_path, xdist):
    root, planned = two_experiments(tmp_path)
    first = faults.run(tmp_path, HOLDOUT, *xdist)
    findings_md = (root / "FINDINGS.md").read_text()
    again = faults.run(tmp_path, HOLDOUT, *xdist)
    assert len(faults.calls(root)) == planned and again.returncode == first.returncode
    assert_spent_once(root, planned)
    assert (root / "FINDINGS.md").read_text() == findings_md
    out = again.stdout
    assert "aqven standing findings" in out and out.count("(holdout, nothing ran): confirmed") == 2
    assert "held-out cases are spent once: the held-out cases of rate_a already gave finding " \
           "experiments/rate_a/findings/" in out
    assert "--aqven-new-series, which takes only held-out cases no finding used" in out


@pytest.mark.slow
def test_lf_after_an_inconclusive_verdict_runs_nothing_and_fails_again_saying_why(tmp_path):
    root = faults.make(tmp_path, cases=16, experiments=("rate_a",))
    exp = root / "experiments/rate_a/experiment.yaml"
    exp.write_text(exp.read_text().replace("above: 0.5", "above: 0.99"))           # too few cases to decide
    cmd = [sys.executable, "-m", "pytest", "proj", "-q", "-rs", HOLDOUT]           # with the cache: --lf needs it
    first = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert first.returncode == 1 and "inconclusive" in first.stdout
    paid = len(faults.calls(root))
    for again in ("--lf", "--sw"):
        run = subprocess.run([*cmd, again], cwd=tmp_path, capture_output=True, text=True)
        # the standing verdict is a failed test like any: --sw stops there, which pytest reports as interrupted
        assert run.returncode == (2 if again == "--sw" else 1) and len(faults.calls(root)) == paid, run.stdout
        assert "verdict inconclusive (the finding that stands; nothing ran)" in run.stdout
        if again == "--lf":     # the failure is headed by its experiment, as a decided verdict's is
            assert re.search(r"^_+ rate_a verdict _+$", run.stdout, re.M), run.stdout
        assert "already gave finding experiments/rate_a/findings/" in run.stdout
    assert len(faults.series(root, "holdout")) == 1 and len(faults.finding_files(root)) == 1


@pytest.mark.slow
def test_a_kill_between_two_experiments_decisions_then_the_same_command(tmp_path, xdist):
    root, planned = two_experiments(tmp_path, files={"conftest.py": KILL_AT_VERDICT})
    killed = faults.run(tmp_path, HOLDOUT, *xdist, env={"FAULT_KILL_AT_VERDICT": "1"})
    assert killed.returncode == -9 and len(faults.finding_files(root)) == 1
    again = faults.run(tmp_path, HOLDOUT, *xdist)
    assert again.returncode == 0, again.stdout
    assert len(faults.calls(root)) == planned            # the undecided series reused every attempt
    assert_spent_once(root, planned)
    assert "(holdout, nothing ran): confirmed" in again.stdout and f"(holdout, {planned // 2}/{planned // 2} " \
           f"attempts): confirmed" in again.stdout


@pytest.mark.slow
def test_a_run_that_concludes_an_experiment_while_another_run_is_past_its_collection(tmp_path, xdist):
    """Run A collects both experiments (nothing spent yet) and waits; run B concludes rate_b meanwhile. A's
    held-out series of rate_b then finds its cases taken as it opens: it runs nothing and reports B's finding,
    so every held-out attempt is paid once and each experiment has one look."""
    root, planned = two_experiments(tmp_path, files={"conftest.py": faults.HOLD_AFTER_COLLECTION})
    a = faults.start(tmp_path, HOLDOUT, *xdist, env={"FAULT_HOLD_AFTER_COLLECTION": "1"})
    try:
        faults.wait_until(lambda: faults.collected(root) == (2 if xdist else 1), a, what="run A collected")
        b = faults.run(tmp_path, HOLDOUT, *xdist, "-k", "rate_b", "--aqven-concurrency", "8")
    finally:
        (root / "go-on").touch()
    out = a.communicate(timeout=300)[0]
    assert b.returncode == 0 and a.returncode == 0, out
    assert len(faults.calls(root)) == planned
    assert_spent_once(root, planned)
    assert "holdout looks" not in (root / "FINDINGS.md").read_text()
    (finding,) = [p for p in faults.finding_files(root) if p.parent.parent.name == "rate_b"]
    assert f"SKIPPED [{planned // 2}] proj/experiments/rate_b/experiment.yaml:1: held-out cases spent: finding " \
           f"{finding.relative_to(root).as_posix()} (confirmed) stands, nothing ran" in out, out
    assert "rate_b (holdout, nothing ran): confirmed" in out and f"rate_a (holdout, {planned // 2}/{planned // 2} " \
           f"attempts): confirmed" in out
    assert f"{planned // 2 + 2} passed, {planned // 2} skipped" in out        # both verdicts reported


@pytest.mark.slow
def test_a_run_on_held_out_cases_another_run_is_running_runs_nothing_and_says_which_series(tmp_path):
    """Run A holds a held-out series of 6 cases in flight; run B, another plan of the same experiment (all
    its held-out cases), would open a second series on them: it runs nothing, its verdict open, naming A's."""
    root = faults.make(tmp_path, cases=24, gate=2)
    a = faults.start(tmp_path, HOLDOUT, "--aqven-cases", "6")
    try:
        faults.wait_until(lambda: len(faults.calls(root)) >= 2, a, what="run A calling")
        b = faults.run(tmp_path, HOLDOUT)
    finally:
        (root / "go").touch()
    out = a.communicate(timeout=300)[0]
    (series,) = faults.series(root, "holdout")
    assert a.returncode == 0 and len(faults.calls(root)) == 6, out
    assert b.returncode == 1 and f"held-out cases taken: series {series['series_id']} of another run is running " \
                                 f"them, nothing ran" in b.stdout, b.stdout
    assert "verdict open (the finding that stands; nothing ran)" in b.stdout and len(faults.finding_files(root)) == 1


@pytest.mark.slow          # a worker killed mid-series and replaced: long (CI runs -m slow)
def test_an_xdist_worker_killed_mid_series_then_the_same_command(tmp_path):
    root, planned = two_experiments(tmp_path, gate=12, sleep=0.05)
    args = (HOLDOUT, *XDIST["n2"], "--aqven-concurrency", "2")
    faults.kill_worker_mid_series(tmp_path, root, 12, *args)
    again = faults.run(tmp_path, *args)
    assert again.returncode == 0, again.stdout
    assert_spent_once(root, planned)
    assert len(faults.calls(root)) <= planned + 4         # only the calls the killed worker had in flight again


@pytest.mark.parametrize("concurrency", ["1", "2"])
@pytest.mark.slow
def test_a_worker_killed_after_reporting_a_record_it_never_committed_decides_nothing_on_it(tmp_path, concurrency):
    """The group commit's window: the controller got an attempt's record, its finish never committed. No
    verdict rests on it: the series stays running, and the same command runs what is missing and decides it."""
    root, planned = two_experiments(tmp_path, files={"conftest.py": faults.KILL_AFTER_REPORT})
    args = (HOLDOUT, *XDIST["n2"], "--aqven-concurrency", concurrency)
    killed = faults.run(tmp_path, *args, env={"FAULT_KILL_AFTER_REPORT": "gw0"})
    (open_series,) = [s for s in faults.series(root, "holdout") if s["status"] == "running"]
    missing = planned - faults.finished(root)
    assert killed.returncode == 1 and missing > 0 and len(faults.finding_files(root)) == 1, killed.stdout
    assert f"series {open_series['series_id']} is not decided: " in killed.stdout
    assert "not recorded in the project database (xdist worker gw0 went down before committing" in killed.stdout
    paid = len(faults.calls(root))
    again = faults.run(tmp_path, *args)
    assert again.returncode == 0, again.stdout
    assert len(faults.calls(root)) - paid == missing                  # only what the database did not have
    assert_spent_once(root, planned)
    assert f"{open_series['experiment']} (holdout, {planned // 2}/{planned // 2} attempts): confirmed" in again.stdout


@pytest.mark.slow
def test_the_one_process_killed_after_an_attempts_report_before_its_commit_decides_nothing(tmp_path):
    """Without xdist the process that tallies is the one killed: no verdict, the same command completes it."""
    root, planned = two_experiments(tmp_path, files={"conftest.py": faults.KILL_AFTER_REPORT})
    killed = faults.run(tmp_path, HOLDOUT, env={"FAULT_KILL_AFTER_REPORT": "main"})
    assert killed.returncode == -9 and faults.finding_files(root) == []
    again = faults.run(tmp_path, HOLDOUT)
    assert again.returncode == 0, again.stdout
    assert_spent_once(root, planned)


def publish_elsewhere(tmp_path, root):
    """A fresh clone: the project's files with its findings and FINDINGS.md, no .aqven/."""
    other = tmp_path / "clone"
    shutil.copytree(root, other / "proj", ignore=shutil.ignore_patterns(".aqven", "calls.log", "__pycache__"))
    return other, other / "proj"


@pytest.mark.slow
def test_a_fresh_clone_with_committed_findings_spends_nothing(tmp_path, xdist):
    root, planned = two_experiments(tmp_path)
    first = faults.run(tmp_path, HOLDOUT)
    cwd, clone = publish_elsewhere(tmp_path, root)
    check = faults.aqven(cwd, "check", "proj")
    assert check.returncode == 0 and "errors: 0, warnings: 0" in check.stdout, check.stdout
    run = faults.run(cwd, HOLDOUT, *xdist)
    assert run.returncode == first.returncode and faults.calls(clone) == [], run.stdout
    assert "W_FINDINGS_STALE" not in run.stdout and run.stdout.count("(holdout, nothing ran)") == 2


@pytest.mark.slow          # three runs, one under xdist (CI runs -m slow)
def test_a_fresh_clone_runs_only_new_cases_and_regenerates_findings_md_from_the_files(tmp_path):
    root, planned = two_experiments(tmp_path)
    faults.run(tmp_path, HOLDOUT)
    cwd, clone = publish_elsewhere(tmp_path, root)
    names = [f"new_{i:02d}" for i in range(12)]
    held = [name for name in names if split_of(faults.PACKAGE, "reviews", name) == "holdout"]
    faults.add_cases(clone, names)
    fresh = faults.run(cwd, HOLDOUT, *XDIST["n2"], "--aqven-new-series")
    assert fresh.returncode == 0 and "W_FINDINGS_STALE" not in fresh.stdout, fresh.stdout
    assert {line.split("|")[2] for line in faults.calls(clone)} == set(held)     # new held-out cases only
    assert len(faults.finding_files(clone)) == 4
    check = faults.aqven(cwd, "check", "proj")
    assert check.returncode == 0 and "errors: 0, warnings: 0" in check.stdout, check.stdout


@pytest.mark.slow
def test_a_database_set_aside_spends_nothing_again(tmp_path):
    root, planned = two_experiments(tmp_path)
    faults.run(tmp_path, HOLDOUT)
    faults.database(root).write_bytes(b"not a database" * 100)
    for side in ("-wal", "-shm"):
        faults.database(root).with_name("aqven.sqlite" + side).unlink(missing_ok=True)
    assert "moved aside" in faults.run(tmp_path, HOLDOUT).stderr
    run = faults.run(tmp_path, HOLDOUT)
    assert run.returncode == 0 and len(faults.calls(root)) == planned and "W_FINDINGS_STALE" not in run.stdout


@pytest.mark.slow
def test_new_series_takes_only_fresh_cases_and_says_when_there_are_none(tmp_path):
    root = faults.make(tmp_path, cases=16, experiments=("rate_a",), plan_cases=6)
    half = [n for n in (f"case_{i:02d}" for i in range(16)) if split_of(faults.PACKAGE, "reviews", n) == "holdout"]
    assert 6 < len(half) <= 12                                # a first series of 6, then the rest are fresh
    faults.run(tmp_path, HOLDOUT)
    first = {line.split("|")[2] for line in faults.calls(root)}
    faults.run(tmp_path, HOLDOUT, "--aqven-new-series")
    second = {line.split("|")[2] for line in faults.calls(root)} - first
    assert second == set(half) - first                        # every fresh case, none of the first series'
    last = faults.run(tmp_path, HOLDOUT, "--aqven-new-series")
    assert f"all {len(half)} held-out cases of rate_a already gave a finding" in last.stdout, last.stdout
    assert "so --aqven-new-series has none to run" in last.stdout
    assert len(faults.calls(root)) == len(half) and len(faults.series(root, "holdout")) == 2


@pytest.mark.slow
def test_respend_holdout_runs_the_spent_cases_again_and_the_finding_says_so(tmp_path):
    root = faults.make(tmp_path, cases=16, experiments=("rate_a",))
    faults.run(tmp_path, HOLDOUT)
    (first,) = faults.finding_files(root)
    again = faults.run(tmp_path, HOLDOUT, "--aqven-respend-holdout")
    assert again.returncode == 0, again.stdout
    (second,) = [p for p in faults.finding_files(root) if p != first]
    assert f'  respent_from:\n  - "{first.stem}"\n' in second.read_text()
    assert "Confirmed in 2 of 2 holdout looks." in (root / "FINDINGS.md").read_text()
    assert faults.aqven(tmp_path, "check", "proj").returncode == 0


@pytest.mark.parametrize("args,said", [(("--aqven-respend-holdout",), "goes with --aqven-holdout"),
                                       ((HOLDOUT, "--aqven-respend-holdout", "--aqven-new-series"),
                                        "exclude each other")])
def test_respend_holdout_usage(pytester, args, said):
    faults.make(pytester.path, cases=8)
    result = pytester.runpytest("proj", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR and said in result.stderr.str()


def test_spent_cases_are_known_from_the_finding_files_alone(tmp_path):
    root = faults.make(tmp_path, cases=16, experiments=("rate_a",), plan_cases=5)
    faults.run(tmp_path, HOLDOUT)
    ran = {line.split("|")[2] for line in faults.calls(root)}
    shutil.rmtree(root / ".aqven")
    project = load_project(root)
    used = spent(project, project.experiments["rate_a"])
    names = [c.name for c in project.datasets["reviews"].spec.cases]
    assert used.names == set() and used.among(names, experiment_salt(faults.PACKAGE, "rate_a")) == ran


def test_a_held_out_series_run_is_built_with_what_is_spent(tmp_path):
    """series/ reads no finding file: its caller hands a held-out SeriesRun the spent cases (findings.spent), and
    one that forgets fails at once instead of running spent cases again."""
    root = faults.make(tmp_path, cases=16, experiments=("rate_a",))
    project = load_project(root)
    with pytest.raises(TypeError, match="spent="):
        SeriesRun(project, project.experiments["rate_a"], "holdout")
    assert SeriesRun(project, project.experiments["rate_a"], "holdout",
                     spent=spent(project, project.experiments["rate_a"])).plan.cases
