"""The example project is part of the suite: its experiments give the verdicts their experiment.md predicts."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "example_project"


def predictions() -> list[tuple[str, str, str]]:
    out = []
    for md in sorted(EXAMPLE.glob("experiments/*/experiment.md")):
        for split, state in re.findall(r"- (working|held-out) cases .*: \*\*(\w+)\*\*", md.read_text()):
            out.append((md.parent.name, "holdout" if split == "held-out" else "dev", state))
    return out


def test_every_experiment_states_its_verdicts():
    experiments = {p.parent.name for p in EXAMPLE.glob("experiments/*/experiment.yaml")}
    assert {e for e, _, _ in predictions()} == experiments
    assert len(predictions()) == 2 * len(experiments)


def splits() -> list[str]:
    return sorted({split for _, split, _ in predictions()})


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "n2"])
@pytest.mark.parametrize("split", splits())
def test_the_example_gives_the_predicted_verdicts(pytester, split, xdist):
    """`pytest example_project [--aqven-holdout]` as a user types it: every experiment in one session."""
    shutil.copytree(EXAMPLE, pytester.path / "example_project", ignore=shutil.ignore_patterns(".aqven", "findings",
                                                                                               "FINDINGS.md"))
    args = ["example_project", "-p", "no:cacheprovider", *xdist]
    result = pytester.runpytest(*args, *(["--aqven-holdout"] if split == "holdout" else []))
    expected = {experiment: state for experiment, s, state in predictions() if s == split}
    for experiment, state in expected.items():
        lines = [l for l in result.outlines if l.startswith(f"{experiment} ({split}, ")]
        assert len(lines) == 1, result.outlines
        assert f": {state} - " in lines[0], experiment
        findings = list((pytester.path / "example_project/experiments" / experiment / "findings").glob("*.yaml"))
        assert len(findings) == (1 if split == "holdout" else 0), experiment
    failing = [e for e, state in expected.items() if split == "holdout" and state in ("refuted", "inconclusive",
                                                                                        "invalid")]
    failed = sorted(l.split()[1] for l in result.outlines if l.startswith("FAILED "))
    assert failed == [f"example_project/experiments/{e}/experiment.yaml::verdict" for e in failing], result.outlines
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if failing else pytest.ExitCode.OK)
