"""The seed's example output of `aqven check`, byte for byte, on a project shaped like its showcase; but for
the E_CASES_EMPTY hint, which also names the values of the mistyped tag, as the seed says every hint does
("Each hint names the values that would fit")."""
import subprocess
import sys

from pytest_aqven.cli import main

SEED_OUTPUT = """\
experiments/reply_look/experiment.yaml:10:3: error E_CASES_EMPTY cases.tags: experiment reply_look: tags regression=yess select no case of dataset support_case_cases
  hint: tag the cases of the dataset or relax the tag filter under cases.tags; tag regression has: no, yes
experiments/reply_overpromise_risk/experiment.yaml:25:3: error E_METRIC_UNKNOWN question.metric: experiment reply_overpromise_risk: metric promise is neither a check id of the experiment nor a series metric
  hint: name a check id (promises, customer_language) or a series metric (success_rate, cost_usd, cost_of_pass, latency_p50_ms, latency_p95_ms, schema_valid_first_try, infra_error_rate)
"""


def break_like_the_seed(showcase):
    showcase.edit("experiments/reply_look/experiment.yaml", 'regression: "yes"', 'regression: "yess"')
    showcase.edit("experiments/reply_overpromise_risk/experiment.yaml", 'metric: "promises"', 'metric: "promise"')


def test_the_valid_showcase_has_no_diagnostics(showcase, capsys):
    assert main(["check", str(showcase.root)]) == 0
    assert capsys.readouterr().out == "errors: 0, warnings: 0\n"


def test_seed_example_byte_for_byte(showcase, capsys):
    break_like_the_seed(showcase)
    assert main(["check", str(showcase.root)]) == 1
    assert capsys.readouterr().out == SEED_OUTPUT + "errors: 2, warnings: 0\n"


def test_seed_example_from_a_subfolder_with_the_installed_command(showcase):
    """The console entry point, run from inside the project: the module root is found upward."""
    break_like_the_seed(showcase)
    inside = showcase.root / "experiments" / "reply_look"
    done = subprocess.run([sys.executable, "-c", "import sys; from pytest_aqven.cli import main; sys.exit(main())",
                           "check", "--static"], cwd=inside, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == SEED_OUTPUT + "errors: 2, warnings: 0\n"
