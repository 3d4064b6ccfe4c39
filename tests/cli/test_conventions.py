"""The `aqven` command as CI and shell users meet it: a closed pipe, an ASCII terminal, --version, one
spelling of the project argument, GitHub annotations."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_aqven import __version__
from pytest_aqven.cli import SIGPIPE_EXIT, main

EXAMPLE = Path(__file__).parents[2] / "example_project"
AQVEN = [sys.executable, "-c", "import sys; from pytest_aqven.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """The example project after one working run: a series to list, show and export."""
    root = tmp_path_factory.mktemp("cli") / "example_project"
    shutil.copytree(EXAMPLE, root)
    subprocess.run([sys.executable, "-m", "pytest", str(root), "-q", "-p", "no:cacheprovider", "-n", "0"],
                   cwd=root.parent, check=True, stdout=subprocess.DEVNULL)
    return root


def series_id(project: Path) -> str:
    out = subprocess.run([*AQVEN, "series", "list", "--project", str(project)], capture_output=True, text=True,
                         check=True).stdout
    return next(line.split()[0] for line in out.splitlines() if "small_replaces_large" in line)


def commands(project: Path) -> list[list[str]]:
    sid, where = series_id(project), str(project)
    return [["check", where], ["check", where, "--format", "json"], ["check", "--project", where, "--format", "github"],
            ["plan", "--project", where], ["series", "list", "--project", where],
            ["series", "show", sid, "--project", where],
            ["series", "show", sid, "--case", "refund_gift", "--project", where],
            ["series", "export", sid, "--project", where], ["series", "export", sid, "--format", "csv", "--project", where],
            ["db", "check", "--project", where], ["findings", "rebuild", where], ["--version"], ["--help"]]


@pytest.mark.slow
def test_every_subcommand_ends_quietly_on_a_closed_pipe(project):
    """`aqven ... | head -1`: the reader leaves after a line; no traceback, and never exit 1 (for check: errors
    found): the shell's code for a closed pipe, 141, or 0 when everything was written before."""
    for argv in commands(project):
        with subprocess.Popen([*AQVEN, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            proc.stdout.readline()
            proc.stdout.close()             # head -1
            err = proc.stderr.read()
            code = proc.wait()
        assert err == "" and code in (0, SIGPIPE_EXIT), (argv, code, err)
    piped = subprocess.run(f"{' '.join(map(repr, AQVEN))} series export {series_id(project)} --project "
                           f"{project} | head -1", shell=True, capture_output=True, text=True)
    assert piped.stderr == "" and piped.stdout.startswith("{")


@pytest.mark.slow       # `aqven plan` runs its simulated search in a process of its own
def test_output_is_ascii_safe_on_a_terminal_that_cannot_show_unicode(project):
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([*AQVEN, "plan", "small_agent_accuracy", "--project", str(project)], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0 and done.stderr == ""
    assert "100 attempts (20 cases x 5 repeats x 1 variant)" in done.stdout


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"aqven (pytest-aqven) {__version__}\n"


def test_every_subcommand_takes_the_project_as_project_and_the_old_path_still_works(project, capsys):
    sid = series_id(project)
    for argv in (["check", "--project", str(project)], ["plan", "small_agent_accuracy", "--project", str(project)],
                 ["series", "list", "--project", str(project)], ["series", "list", "--path", str(project)],
                 ["series", "show", sid, "--project", str(project)], ["db", "check", "--project", str(project)],
                 ["findings", "rebuild", "--project", str(project)]):
        assert main(argv) == 0, argv
    assert capsys.readouterr().err == ""


def test_check_format_github_annotates_each_diagnostic(tmp_path, capsys):
    root = tmp_path / "example_project"
    shutil.copytree(EXAMPLE, root)
    path = root / "experiments/small_agent_accuracy/experiment.yaml"
    path.write_text(path.read_text().replace('metric: "intent"', 'metric: "intnet"'))
    assert main(["check", str(root), "--format", "github"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("::error file=experiments/small_agent_accuracy/experiment.yaml,line=")
    assert ",title=E_METRIC_UNKNOWN::question.metric: experiment small_agent_accuracy: metric intnet " in out[0]
    assert "%0Ahint: name a check id" in out[0] and out[-1] == "errors: 1, warnings: 0"


def test_check_format_github_names_files_from_the_repository_root(tmp_path, capsys, monkeypatch):
    """GitHub resolves an annotation's file from the repository root: a project in a subfolder is prefixed with
    it, found by the `.git` above it, or by GITHUB_WORKSPACE, which wins."""
    repo = tmp_path / "repo"
    root = repo / "evals" / "helpdesk"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".aqven"))
    (repo / ".git").mkdir()
    path = root / "experiments/small_agent_accuracy/experiment.yaml"
    path.write_text(path.read_text().replace('metric: "intent"', 'metric: "intnet"'))
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.chdir(root / "experiments")
    assert main(["check", str(root), "--format", "github"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("::error file=evals/helpdesk/experiments/small_agent_accuracy/experiment.yaml,line="), first
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo / "evals"))
    assert main(["check", str(root), "--format", "github"]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("::error file=helpdesk/experiments/small_agent_accuracy/experiment.yaml,line="), first
