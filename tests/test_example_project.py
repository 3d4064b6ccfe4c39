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


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["no-xdist", "n2"])
@pytest.mark.parametrize("experiment, split, state", predictions())
def test_the_example_gives_the_predicted_verdict(pytester, experiment, split, state, xdist):
    shutil.copytree(EXAMPLE, pytester.path / "example_project", ignore=shutil.ignore_patterns(".aqven", "findings",
                                                                                               "FINDINGS.md"))
    args = ["example_project", "-p", "no:cacheprovider", "-k", experiment, *xdist]
    result = pytester.runpytest(*args, *(["--aqven-holdout"] if split == "holdout" else []))
    lines = [l for l in result.outlines if l.startswith(f"{experiment} ({split}, ")]
    assert len(lines) == 1, result.outlines
    assert f": {state} - " in lines[0]
    fails = split == "holdout" and state in ("refuted", "inconclusive", "invalid")
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if fails else pytest.ExitCode.OK)
    findings = list((pytester.path / "example_project/experiments" / experiment / "findings").glob("*.yaml"))
    assert len(findings) == (1 if split == "holdout" else 0)
