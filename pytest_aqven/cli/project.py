"""The project argument of every `aqven` subcommand. The subcommands cli/__init__.py assembles each add their
parsers (`add_*`) and run them (`run_*`): series.py `aqven series` and `aqven db`, cases.py `aqven cases`. They
sit on the top layer over the library they call."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse


def project_argument(p, positional: bool = False) -> None:
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
