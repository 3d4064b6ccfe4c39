"""Experiments shaped like the showcase's, on a provider whose true behaviour is known: each reaches the
verdict it must (tests/showcase_experiments.py says why), the same with and without xdist."""
from __future__ import annotations

import re

import pytest

from .. import showcase_experiments as showcase
from ..conftest import XDIST

FLOW_FACTOR = True
EXPECTED = {**showcase.VERDICTS, **(showcase.FLOW_VERDICTS if FLOW_FACTOR else {})}


def verdicts(result) -> dict[str, str]:
    out = {}
    for line in result.outlines:
        m = re.match(r"^([a-z_]+) \((holdout|dev), \d+/\d+ attempts\): (\w+) - (.*)$", line)
        if m:
            out[m.group(1)] = f"{m.group(3)} - {m.group(4)}"
    return out


@pytest.mark.slow
def test_every_showcase_experiment_reaches_its_verdict(pytester, xdist):
    root = showcase.write(pytester.path / "lumen", flow_factor=FLOW_FACTOR)
    result = pytester.runpytest("lumen", "-p", "no:cacheprovider", "--aqven-holdout", "--aqven-fail-on=invalid",
                                "-rs", *xdist)
    got = verdicts(result)
    held_out = {k: v for k, v in EXPECTED.items() if v != "look"}     # a look is skipped on held-out cases
    assert {k: v.split(" - ")[0] for k, v in got.items()} == held_out, "\n".join(result.outlines[-40:])
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] lumen/experiments/reply_look/experiment.yaml:1: a look is skipped "
                                 "under --aqven-holdout*"])
    assert "judge critique has no validated_by" in got["reply_critique_unvalidated"]
    assert result.ret == pytest.ExitCode.OK
    looks = root / "experiments/reply_look/findings"
    assert not looks.exists(), "a look never writes a finding"
    written = {p.parent.parent.name for p in root.glob("experiments/*/findings/*.yaml")}
    assert written == set(EXPECTED) - {"reply_look"}


@pytest.mark.slow
def test_the_verdicts_are_the_same_with_and_without_xdist(pytester):
    """The sentences too, but for the robust interval's bootstrap (its seed is the findings issue's): a verdict
    is a function of the attempts' data alone."""
    runs = []
    for xdist in XDIST.values():
        root = pytester.path / f"lumen{len(xdist)}"
        showcase.write(root, flow_factor=FLOW_FACTOR)
        runs.append(verdicts(pytester.runpytest(root.name, "-p", "no:cacheprovider", "--aqven-holdout",
                                                "--aqven-fail-on=invalid", "-k", "panel_ or critique_planted",
                                                *xdist)))
    def figures(run):
        return {k: re.sub(r"\(95% CI [^)]*\)", "(95% CI)", v) for k, v in run.items()}
    assert figures(runs[0]) == figures(runs[1]) and len(runs[0]) == (5 if FLOW_FACTOR else 4)
