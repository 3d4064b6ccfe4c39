"""Hostile YAML: only the files the project format names are read, and every YAML read (finding files and
.aqven/local.yaml included) goes through the strict loader, with its alias, depth and size limits."""
from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_aqven.experiments import inputs
from pytest_aqven.project import yamlpos
from pytest_aqven.project.loader import load_project

from .. import faults, projects
from ..conftest import XDIST

LAUGHS, DEEP = faults.LAUGHS, faults.DEEP


def test_run_references_are_read_from_the_project_files_only(tmp_path):
    """The modules a series hashes as its inputs come from `run:` values of the files the loader parsed; a YAML
    lying elsewhere in the folder (notes, a bomb) is never opened."""
    aqven = projects.FILES["aqven.yaml"].replace("@root.provider:complete", "helpers.text:complete")
    root = projects.make(tmp_path, 4, files={"aqven.yaml": aqven, "notes/bomb.yaml": LAUGHS, "notes/deep.yaml": DEEP,
                                             "notes/refs.yaml": 'run: "notes.mod:fn"\n'})
    assert inputs._run_modules(load_project(root)) == {"helpers.text"}


@pytest.mark.parametrize("name,text,mode", [("bomb", LAUGHS, "no-xdist"), ("deep", DEEP, "n2")])
@pytest.mark.slow
def test_a_yaml_bomb_outside_the_project_files_is_never_read(tmp_path, name, text, mode):
    root = faults.make(tmp_path, cases=8)
    (root / "notes").mkdir()
    (root / "notes" / f"{name}.yaml").write_text(text)
    result = faults.run(tmp_path, *XDIST[mode], timeout=120)
    assert result.returncode == 0, result.stdout
    assert "Traceback" not in result.stdout and "RecursionError" not in result.stdout
    assert "rate_ok (dev" in result.stdout and len(faults.calls(root)) > 0
    check = faults.aqven(tmp_path, "check", "proj", timeout=60)
    assert check.returncode == 0 and "errors: 0" in check.stdout


def test_a_990_deep_project_file_is_a_diagnostic_not_a_traceback(pytester):
    root = faults.make(pytester.path, cases=8)
    (root / "datasets" / "reviews.yaml").write_text(DEEP)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    text = result.stdout.str()
    assert "datasets/reviews.yaml:1:" in text and "E_YAML_DEPTH" in text and "Traceback" not in text


def test_a_finding_shaped_bomb_is_refused_in_a_line(tmp_path):
    root = faults.make(tmp_path, cases=8)
    bomb = faults.finding_bomb(root)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31)); "
    check = subprocess.run([sys.executable, "-c", limit + "from pytest_aqven.cli import main; raise SystemExit(main())",
                            "check", "proj"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert check.returncode == 1, check.stdout + check.stderr
    assert bomb.relative_to(root).as_posix() in check.stdout
    assert "E_FINDING_TAMPERED" in check.stdout and "anchor &a is not allowed" in check.stdout
    assert "MemoryError" not in check.stdout and "E_CHECK_INTERNAL" not in check.stdout


@pytest.mark.parametrize(("text", "diagnostic"), [
    ("cap: &c 2\nresearch:\n  spend_cap_usd: *c\n", ".aqven/local.yaml:1:6: error E_YAML_ANCHOR: anchor &c is not allowed"),
    ("research:\n  spend_cap_usd: 0\n", ".aqven/local.yaml:2:3: error E_SPEC_INVALID research.spend_cap_usd: the cap "
                                       "must be a positive amount in USD, not 0"),
])
@pytest.mark.slow
def test_the_local_override_is_refused_alike_by_aqven_check_and_pytest(tmp_path, xdist, text, diagnostic):
    root = faults.make(tmp_path, cases=8)
    (root / ".aqven").mkdir()
    (root / ".aqven" / "local.yaml").write_text(text)
    check = faults.aqven(tmp_path, "check", "proj")
    assert check.returncode == 1 and diagnostic in check.stdout, check.stdout + check.stderr
    result = faults.run(tmp_path, *xdist)
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
    assert diagnostic in result.stdout and "Traceback" not in result.stdout + result.stderr, result.stdout
    assert faults.calls(root) == []


def test_a_file_larger_than_the_limit_is_refused_unread(tmp_path, monkeypatch):
    root = projects.make(tmp_path, 40)
    monkeypatch.setattr(yamlpos, "MAX_BYTES", 1000)
    project = load_project(root)
    (diag,) = [d for d in project.diagnostics if d.file == "datasets/reviews.yaml"]
    assert diag.code == "E_YAML_TOO_LARGE" and "more than the 1,000 a project file may hold" in diag.message
