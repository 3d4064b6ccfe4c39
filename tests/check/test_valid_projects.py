"""Zero false positives: every valid project the tests run gives `aqven check` nothing to report, with
every rule of the static type pass, the prompt rules and the secret rules on."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_aqven.api.check import check_root
from pytest_aqven.diagnostics import render_text

from .. import compat_project, projects, showcase_experiments, support_case
from .showcase import Showcase

REPO = Path(__file__).resolve().parents[2]

BUILDERS = {
    "example_project": lambda root: Path(shutil.copytree(REPO / "example_project", root)),
    "check_showcase": lambda root: Showcase(root).root,
    "spoke": compat_project.write_project,
    "support_case": lambda root: support_case.make(root, "supportcase"),
    "lumenlike": showcase_experiments.write,
    "testproj": lambda root: projects.make(root, 4),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_valid_project_has_no_diagnostic(tmp_path, name):
    root = BUILDERS[name](tmp_path / name)
    found = check_root(root)
    # a judge whose calibration experiment has no held-out finding yet is truly unvalidated (issue 20): the
    # lumen-like project states it, and nothing else
    expected = {"lumenlike": ["W_JUDGE_UNVALIDATED"]}.get(name, [])
    assert [d.code for d in found] == expected, render_text(found)
