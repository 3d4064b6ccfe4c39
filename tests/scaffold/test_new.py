"""`aqven new <dir> [--template default|showcase]`: a project that passes `aqven check` and runs offline to
a verdict, also from a wheel installed into a fresh venv (the verdicts are tested in test_example_project.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pytest_aqven.api.check import check_root
from pytest_aqven.cli import main
from pytest_aqven.scaffold import TEMPLATES, package_name, template

REPO = Path(__file__).resolve().parents[2]


def written(root: Path) -> list[str]:
    """The project's files, but for what a run leaves (the project database, bytecode)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and ".aqven" not in p.parts)


def shipped(name: str) -> list[str]:
    return written(Path(str(template(name))))


def test_new_writes_a_project_that_checks_clean(tmp_path, capsys):
    assert main(["new", str(tmp_path / "my-reviews")]) == 0
    out = capsys.readouterr().out
    written_files = written(tmp_path / "my-reviews")
    assert written_files == shipped("default") and ".gitignore" in written_files and "pyproject.toml" in written_files
    assert out == (f"created {tmp_path / 'my-reviews'}: an AQVEN project of {len(written_files)} files, package "
                   f"my_reviews\n"
                   f"next: aqven check {tmp_path / 'my-reviews'} && pytest {tmp_path / 'my-reviews'}\n")
    assert 'package: "my_reviews"' in (tmp_path / "my-reviews/aqven.yaml").read_text()
    assert check_root(tmp_path / "my-reviews") == []


def test_new_into_an_empty_folder_and_with_a_package_name(tmp_path, capsys):
    (tmp_path / "here").mkdir()
    assert main(["new", str(tmp_path / "here"), "--package", "reviews_lab"]) == 0
    assert 'package: "reviews_lab"' in (tmp_path / "here/aqven.yaml").read_text()


def test_the_default_template_is_the_one_without_template(tmp_path, capsys):
    assert main(["new", str(tmp_path / "a"), "--template", "default"]) == 0
    assert main(["new", str(tmp_path / "b")]) == 0
    assert written(tmp_path / "a") == written(tmp_path / "b") == shipped("default")


def test_new_showcase_writes_every_file_and_checks_clean_but_for_its_unvalidated_judge(tmp_path, capsys):
    """The showcase's judge names its calibration in validated_by, which has no held-out finding until the
    first `pytest --aqven-holdout` (test_example_project.py checks it clean after that run)."""
    assert main(["new", str(tmp_path / "my-desk"), "--template", "showcase"]) == 0
    files = written(tmp_path / "my-desk")
    assert files == shipped("showcase") and ".gitignore" in files and "sim.py" in files
    assert capsys.readouterr().out.startswith(f"created {tmp_path / 'my-desk'}: an AQVEN project of {len(files)} "
                                              "files, package my_desk\n")
    assert 'package: "my_desk"' in (tmp_path / "my-desk/aqven.yaml").read_text()
    diagnostics = check_root(tmp_path / "my-desk")
    assert [(d.code, d.file) for d in diagnostics] == [
        ("W_JUDGE_UNVALIDATED", "experiments/reply_noninferior_mistral/experiment.yaml")]
    assert main(["new", str(tmp_path / "lab"), "--template", "showcase", "--package", "support_lab"]) == 0
    assert 'package: "support_lab"' in (tmp_path / "lab/aqven.yaml").read_text()


def test_new_refuses_an_unknown_template_listing_the_templates(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["new", str(tmp_path / "p"), "--template", "fancy"])
    assert exit_.value.code == 2 and not (tmp_path / "p").exists()
    assert "invalid choice: 'fancy' (choose from 'default', 'showcase')" in capsys.readouterr().err
    assert list(TEMPLATES) == ["default", "showcase"]


@pytest.mark.parametrize("args, message", [
    (["--package", "json"], "json is already a Python module here, which the project's package would shadow"),
    (["--package", "pytest"], "pytest is already a Python module here"),
    (["--package", "class"], "class is not a Python identifier"),
    (["--package", "my-reviews"], "my-reviews is not a Python identifier"),
])
def test_new_refuses_a_package_name_that_cannot_be_imported_as_the_project(tmp_path, capsys, args, message):
    assert main(["new", str(tmp_path / "p"), *args]) == 2
    assert message in capsys.readouterr().err and not (tmp_path / "p").exists()


def test_new_never_writes_into_a_folder_with_files(tmp_path, capsys):
    (tmp_path / "p").mkdir()
    (tmp_path / "p/notes.txt").write_text("mine")
    assert main(["new", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err == f"aqven new: {tmp_path / 'p'} exists and is not an empty folder; nothing was written\n"
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("folder, package", [("demo", "demo"), ("My Reviews-2", "my_reviews_2"), ("2024", "p_2024")])
def test_the_package_name_comes_from_the_folder(folder, package):
    assert package_name(folder) == package


@pytest.mark.slow
def test_new_check_and_pytest_from_a_wheel_in_a_fresh_venv(tmp_path):
    """The newcomer's path: the package built as a wheel and installed (not editable) into a new venv, then
    `aqven new demo && aqven check demo && pytest demo` there. The venv borrows this one's dependencies
    through a .pth line (offline; the line adds the folder, whose own .pth files, such as an editable
    install's, are not read), so what it imports of pytest_aqven is the wheel's."""
    source = tmp_path / "source"        # built from a copy: a build writes build/ and egg-info beside the sources
    shutil.copytree(REPO / "pytest_aqven", source / "pytest_aqven", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("pytest_aqven-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheel)], check=True, capture_output=True)
    site = Path(subprocess.check_output([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                        text=True).strip())
    (site / "borrowed.pth").write_text(sysconfig.get_path("purelib") + "\n")
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))} | {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "120"}
    imported = subprocess.check_output([str(python), "-c", "import pytest_aqven; print(pytest_aqven.__file__)"],
                                       text=True, cwd=work, env=env).strip()
    assert imported.startswith(str(site)), imported
    result = subprocess.run("aqven new demo && aqven check demo && pytest demo -p no:cacheprovider",
                            shell=True, cwd=work, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "errors: 0, warnings: 0" in result.stdout
    assert "small_reads_reviews (dev, " in result.stdout and "large_beats_small (dev, " in result.stdout
    assert result.stdout.count(": signal - Signal on dev") == 2, result.stdout
    # the showcase from the wheel: every file is there (check reads them all), and the whole support_case
    # flow (every node kind) and the local flows run
    result = subprocess.run("aqven new show --template showcase && aqven check show; pytest show -p no:cacheprovider "
                            "-k 'reply_stage_budget or intent_split_long_messages'",
                            shell=True, cwd=work, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "errors: 0, warnings: 1" in result.stdout and "W_JUDGE_UNVALIDATED" in result.stdout
    assert written(work / "show") == shipped("showcase")
    assert "reply_stage_budget (dev, " in result.stdout and "intent_split_long_messages (dev, " in result.stdout
    assert result.stdout.count(": signal - Signal on dev") == 2, result.stdout
