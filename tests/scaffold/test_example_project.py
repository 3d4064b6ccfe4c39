"""The example project and the ones `aqven new` writes (both templates) are part of the suite: their
experiments give the verdicts their experiment.md files predict."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from pytest_aqven.api.check import check_root
from pytest_aqven.scaffold import create, template

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"
# the project folder as a user names it -> where its files come from (the scaffolds' package is `demo`)
PROJECTS = {"example_project": EXAMPLE, "demo": Path(str(template())), "showcase": Path(str(template("showcase")))}


def predictions(root: Path = EXAMPLE) -> list[tuple[str, str, str]]:
    out = []
    for md in sorted(root.glob("experiments/*/experiment.md")):
        for split, state in re.findall(r"- (working|held-out) cases .*: \*\*(\w+)\*\*", md.read_text()):
            out.append((md.parent.name, "holdout" if split == "held-out" else "dev", state))
    return out


@pytest.mark.parametrize("name", PROJECTS)
def test_every_experiment_states_its_verdicts(name):
    experiments = {p.parent.name for p in PROJECTS[name].glob("experiments/*/experiment.yaml")}
    assert {e for e, _, _ in predictions(PROJECTS[name])} == experiments
    assert len(predictions(PROJECTS[name])) == 2 * len(experiments)


def splits() -> list[str]:
    return sorted({split for _, split, _ in predictions()})


@pytest.mark.parametrize("split", splits())
@pytest.mark.parametrize("name", [pytest.param(name, marks=[pytest.mark.slow] if name == "showcase" else [])
                                  for name in PROJECTS])    # the showcase's eight experiments take seconds
def test_the_project_gives_the_predicted_verdicts(pytester, name, split, xdist):
    """`pytest example_project [--aqven-holdout]` (or `pytest demo` after `aqven new demo`, `pytest showcase`
    after `aqven new showcase --template showcase --package demo`) as a user types it: every experiment in
    one session."""
    if name in ("demo", "showcase"):
        create(pytester.path / name, "demo", "default" if name == "demo" else name)
    else:
        shutil.copytree(EXAMPLE, pytester.path / name, ignore=shutil.ignore_patterns(".aqven", "findings", "FINDINGS.md"))
    args = [name, "-p", "no:cacheprovider", "-rfEs", *xdist]
    result = pytester.runpytest(*args, *(["--aqven-holdout"] if split == "holdout" else []))
    expected = {experiment: state for experiment, s, state in predictions(PROJECTS[name]) if s == split}
    for experiment, state in expected.items():
        lines = [l for l in result.outlines if l.startswith(f"{experiment} ({split}, ")]
        findings = list((pytester.path / name / "experiments" / experiment / "findings").glob("*.yaml"))
        if state == "skipped":          # a look under --aqven-holdout: no series, no finding
            assert lines == [] and findings == [], experiment
            result.stdout.fnmatch_lines([f"SKIPPED *{experiment}/experiment.yaml*a look is skipped under --aqven-holdout*"])
            continue
        assert len(lines) == 1, result.outlines
        assert f": {state} - " in lines[0], experiment
        assert len(findings) == (1 if split == "holdout" else 0), experiment
    failing = [e for e, state in expected.items() if split == "holdout" and state in ("refuted", "inconclusive",
                                                                                        "invalid")]
    failed = sorted(l.split()[1].removeprefix(f"{name}/") for l in result.outlines if l.startswith("FAILED "))
    assert failed == [f"experiments/{e}/experiment.yaml::verdict" for e in failing], result.outlines
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if failing else pytest.ExitCode.OK)
    if name == "showcase" and split == "holdout":     # its judge's calibration now stands: the check is clean
        assert check_root(pytester.path / name) == []


def test_the_showcase_readme_gives_the_held_out_verdicts_of_its_experiments():
    readme = (PROJECTS["showcase"] / "README.md").read_text()
    table = dict(re.findall(r"^\| `(\w+)` \|.*\| (\w+) \|$", readme, re.M))
    assert table == {e: state for e, split, state in predictions(PROJECTS["showcase"]) if split == "holdout"}
