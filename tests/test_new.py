"""`aqven new <dir>`: a project that passes `aqven check` and runs offline to a verdict, also from a wheel
installed into a fresh venv (its verdicts are tested in test_example_project.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from pytest_aqven.checker import check_root
from pytest_aqven.cli import main
from pytest_aqven.scaffold import package_name, template

REPO = Path(__file__).resolve().parent.parent


def test_new_writes_a_project_that_checks_clean(tmp_path, capsys):
    assert main(["new", str(tmp_path / "my-reviews")]) == 0
    out = capsys.readouterr().out
    written = sorted(p.relative_to(tmp_path / "my-reviews").as_posix()
                     for p in (tmp_path / "my-reviews").rglob("*") if p.is_file())
    shipped = sorted(p.relative_to(template()).as_posix() for p in Path(str(template())).rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts and ".aqven" not in p.parts)
    assert written == shipped and ".gitignore" in written and "pyproject.toml" in written
    assert out == (f"created {tmp_path / 'my-reviews'}: an AQVEN project of {len(written)} files, package my_reviews\n"
                   f"next: aqven check {tmp_path / 'my-reviews'} && pytest {tmp_path / 'my-reviews'}\n")
    assert 'package: "my_reviews"' in (tmp_path / "my-reviews/aqven.yaml").read_text()
    assert check_root(tmp_path / "my-reviews") == []


def test_new_into_an_empty_folder_and_with_a_package_name(tmp_path, capsys):
    (tmp_path / "here").mkdir()
    assert main(["new", str(tmp_path / "here"), "--package", "reviews_lab"]) == 0
    assert 'package: "reviews_lab"' in (tmp_path / "here/aqven.yaml").read_text()


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
