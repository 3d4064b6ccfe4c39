"""The project argument of every `aqven` subcommand. The subcommands cli/__init__.py assembles each add their
parsers (`add_*`) and run them (`run_*`): series.py `aqven series` and `aqven db`, cases.py `aqven cases`. They
sit on the top layer over the library they call."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..project.paths import PROJECT_FILE, find_root

# what each add_* takes: the subcommands of `aqven` (or of `aqven series`) it adds its parser to
Subcommands = argparse._SubParsersAction


def project_argument(p: argparse.ArgumentParser, positional: bool = False) -> None:
    """`--project PATH` on every subcommand (`--path`, its old spelling on series and db, still works)."""
    help_ = "the module root (the folder of aqven.yaml) or any file or folder inside it (default: .)"
    if positional:
        p.add_argument("path", nargs="?", default=None, metavar="PATH", help=help_ + "; the same as --project")
    p.add_argument("--project", "--path", dest="project", default=None, metavar="PATH", help=help_)
    p.add_argument("--store", default=None, metavar="URL",
                   help="the PostgreSQL store, as pytest's --aqven-store (default: AQVEN_STORE, else the project's "
                        "SQLite file)")


def project_path(args: argparse.Namespace) -> str:
    return getattr(args, "path", None) or args.project or "."


class NoProject(Exception):
    """`where` names no AQVEN project: it does not exist (`missing`), or no folder from it up holds aqven.yaml."""

    def __init__(self, where: str, missing: bool) -> None:
        super().__init__(f"no {PROJECT_FILE} in {where} or any folder above it")
        self.where, self.missing = where, missing


def project_root(args: argparse.Namespace) -> Path:
    """The module root a subcommand's PATH or --project names (default: the current folder): the folder holding
    aqven.yaml, searched upward; every subcommand finds its project this one way. NoProject when there is none."""
    where = project_path(args)
    root = find_root(Path(where)) if Path(where).exists() else None
    if root is None:
        raise NoProject(where, missing=not Path(where).exists())
    return root
