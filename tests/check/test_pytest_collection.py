"""aqven check inside pytest: an experiment's errors become a collection error of its file with the
exact text `aqven check` prints, without a traceback; the other experiments still run; warnings are
listed in the terminal summary and never raised as Python warnings (so -W error cannot break collection)."""
import pytest

from pytest_aqven.cli import main

from .showcase import Showcase

RISK = "experiments/reply_overpromise_risk/experiment.yaml"
LOOK = "experiments/reply_look/experiment.yaml"


@pytest.fixture
def project(pytester) -> Showcase:
    showcase = Showcase(pytester.path / "lumen")
    showcase.remove("experiments/reply_noninferior_mistral/experiment.yaml")
    showcase.edit(RISK, 'metric: "promises"', 'metric: "promise"')             # an error of one experiment
    showcase.edit(LOOK, "question:", "plan:\n  cases: 20\nquestion:")          # a warning of another
    return showcase


def cli_lines(showcase, capsys) -> list[str]:
    assert main(["check", str(showcase.root)]) == 1
    return capsys.readouterr().out.splitlines()


def test_check_errors_and_warnings_in_pytest(pytester, project, capsys, xdist):
    cli = cli_lines(project, capsys)
    assert cli[-1] == "errors: 1, warnings: 1"
    warning, error = cli[0:2], cli[2:4]          # sorted by file, as aqven check prints them
    assert error[0].startswith(RISK + ":25:3: error E_METRIC_UNKNOWN")
    assert warning[0].startswith(LOOK + ":15:3: warning W_PLAN_EXCEEDS_CASES")

    # a fresh process: in-process, pytest_aqven is already imported and -W error would turn pytest's own
    # "cannot rewrite an imported plugin" warning into an error, which a user's run never sees
    result = pytester.runpytest_subprocess("lumen", "-W", "error", "-p", "no:cacheprovider", "-p", "no:benchmark", *xdist)
    out = result.stdout.lines
    result.assert_outcomes(errors=1, passed=5)        # the look still runs: 4 working cases and its verdict
    assert result.ret == pytest.ExitCode.TESTS_FAILED

    start = out.index(next(line for line in out if "ERROR collecting lumen/" + RISK in line))
    assert out[start + 1: start + 3] == error          # exactly the CLI text, and nothing else
    assert out[start + 3].startswith("=")
    assert not any("Traceback" in line or "pytest_aqven" in line for line in out)

    section = out.index(next(line for line in out if "aqven check warnings" in line))
    assert out[section + 1: section + 3] == warning
    assert not any(line.startswith(("warnings summary", "= warnings summary")) or "PytestWarning" in line
                   for line in out)


def test_project_errors_stop_every_experiment(pytester, project, xdist):
    """Each experiment the project's error stops is its own collection error, under xdist too (which shows one
    of several equal errors)."""
    project.edit("agents/gpt.yaml", 'model: "sim:gpt-oss"', 'model: "openai:gpt-oss"')
    result = pytester.runpytest_subprocess("lumen", "-p", "no:cacheprovider", "-p", "no:benchmark", *xdist)
    result.assert_outcomes(errors=2)
    assert result.stdout.lines.count("agents/gpt.yaml:4:1: error E_PROVIDER_UNKNOWN model: agent gpt: provider openai "
                                     "is not declared in aqven.yaml") == 2
    stopped = {line for line in result.stdout.lines if line.endswith("cannot run until the project's errors above "
                                                                      "are fixed")}
    assert stopped == {f"experiment {e} cannot run until the project's errors above are fixed"
                       for e in ("reply_look", "reply_overpromise_risk")}, stopped
