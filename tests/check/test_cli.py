"""`aqven check`: exit codes, formats, finding the module root, and no traceback ever."""
import json

import pytest

from pytest_aqven.api import check as checker
from pytest_aqven.cli import main
from pytest_aqven.experiments.question_rules import QuestionRules


def test_json_format(showcase, capsys):
    showcase.edit("experiments/reply_look/experiment.yaml", 'regression: "yes"', 'regression: "yess"')
    showcase.write("experiments/reply_look/prompts/warmer.md", "Be warm.\n")
    assert main(["check", str(showcase.root), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["errors"], report["warnings"]) == (False, 1, 1)
    first = report["diagnostics"][0]
    assert first == {
        "code": "E_CASES_EMPTY", "severity": "error", "file": "experiments/reply_look/experiment.yaml",
        "path": ["cases", "tags"], "line": 10, "column": 3, "rule": None,
        "message": "experiment reply_look: tags regression=yess select no case of dataset support_case_cases",
        "hint": "tag the cases of the dataset or relax the tag filter under cases.tags; tag regression has: no, yes"}


def test_warnings_alone_exit_0(showcase, capsys):
    showcase.write("experiments/reply_look/prompts/warmer.md", "Be warm.\n")
    assert main(["check", str(showcase.root / "experiments")]) == 0
    assert capsys.readouterr().out.endswith("errors: 0, warnings: 1\n")


def test_no_project_is_exit_2_with_a_clear_message(tmp_path, capsys):
    assert main(["check", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (f"aqven check: no aqven.yaml in {tmp_path} or any folder above it; "
                                 "run aqven check inside an AQVEN project\n")


def test_missing_path_is_exit_2(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err == f"aqven check: {tmp_path / 'nowhere'} does not exist\n"


@pytest.mark.parametrize("argv", [[], ["chek"], ["check", "--format", "xml"], ["check", "a", "b"]])
def test_bad_usage_is_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "usage: aqven" in capsys.readouterr().err


@pytest.mark.parametrize("owner, rule, line", [
    (QuestionRules, "question_rules", "experiments/reply_look/experiment.yaml: error E_CHECK_INTERNAL: "
     "the checker failed while checking experiment reply_look (question_rules): KeyError: 'boom'"),
    (checker, "halves_rules", "experiments: error E_CHECK_INTERNAL: the checker failed while checking the halves of "
     "findings: KeyError: 'boom'"),
])
def test_a_bug_in_a_rule_is_a_diagnostic_not_a_traceback(owner, rule, line, showcase, capsys, monkeypatch):
    def broken(*args):
        raise KeyError("boom")
    broken.__name__ = rule                  # the diagnostic names the rule that failed
    monkeypatch.setattr(owner, rule, broken)
    assert main(["check", str(showcase.root)]) == 1
    out = capsys.readouterr().out
    assert "Traceback" not in out
    assert (line + "\n  hint: this is a bug of pytest-aqven, not of the project: please report it with this file") in out


def test_an_empty_project_file_is_a_diagnostic(tmp_path, capsys):
    (tmp_path / "aqven.yaml").write_text("")
    assert main(["check", str(tmp_path)]) == 1
    assert capsys.readouterr().out == (
        "aqven.yaml:1:1: error E_SPEC_INVALID: project: the file must hold a mapping of keys\nerrors: 1, warnings: 0\n")
