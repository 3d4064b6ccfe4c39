"""`aqven new <dir>`: an AQVEN project that passes `aqven check` and runs offline to a verdict.

The projects' files are package data, so an installed wheel can make one. `default` (`template/`): a
flow of a code node and an llm node, two simulated models priced in its pyproject.toml, forty reviews,
and two experiments (a threshold and a comparison). `showcase` (`showcase/`): an experiment for every
question kind and every kind of variant, over flows that use every node kind. Every experiment.md
states the verdicts its experiment gives.
"""
from __future__ import annotations

import importlib.util
import keyword
import re
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

PACKAGE_LINE = 'package: "demo"'
SKIPPED = ("__pycache__", ".aqven")      # left by a test or a run of the template where it is installed


# template name -> its folder in this package
TEMPLATES = {"default": "template", "showcase": "showcase"}


def template(name: str = "default") -> Traversable:
    return files(__name__) / TEMPLATES[name]


def package_name(folder: str) -> str:
    """The folder's name as a Python identifier: `my-reviews` -> `my_reviews`."""
    name = re.sub(r"\W", "_", Path(folder).resolve().name).strip("_").lower() or "project"
    return f"p_{name}" if name[0].isdigit() else name


def package_problem(package: str, dest: Path) -> str | None:
    """Why `package` cannot name the project's module root, or None. The root is imported under this name,
    so a name Python already resolves (json, pytest, an installed package) would shadow that module; an
    AQVEN project of that name (or the empty folder `dest` itself, on sys.path) is no such module."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", package) or keyword.iskeyword(package):
        return f"{package} is not a Python identifier"
    spec = None if package in sys.stdlib_module_names else importlib.util.find_spec(package)
    if package in sys.stdlib_module_names or spec is not None and not _project_or_dest(spec, dest):
        return f"{package} is already a Python module here, which the project's package would shadow"
    return None


def _project_or_dest(spec, dest: Path) -> bool:
    places = [Path(p) for p in spec.submodule_search_locations or ()]
    return bool(places) and all(
        (p / "aqven.yaml").is_file() or p.resolve() == dest.resolve() for p in places)


def create(dest: Path, package: str, name: str = "default") -> list[Path]:
    """Write the project into `dest` (absent or empty) and return the files written, in order."""
    written: list[Path] = []

    def copy(node: Traversable, target: Path) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name in SKIPPED:
                continue
            if child.is_dir():
                copy(child, target / child.name)
                continue
            text = child.read_text(encoding="utf-8")
            if child.name == "aqven.yaml" and target == dest:
                text = text.replace(PACKAGE_LINE, f'package: "{package}"', 1)
            path = target / child.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            written.append(path)

    copy(template(name), dest)
    return written
