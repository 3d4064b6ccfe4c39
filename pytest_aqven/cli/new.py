"""`aqven new DIR`: the parser and the run of the subcommand; the projects it writes are scaffold/'s."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..scaffold import TEMPLATES, create, package_name, package_problem
from .project import Subcommands


def add_new(commands: Subcommands) -> None:
    p = commands.add_parser(
        "new", help="create an AQVEN project that runs offline",
        description="Create an AQVEN project in DIR (absent or empty). `aqven check DIR` passes and `pytest DIR` "
                    "runs it to a verdict, offline, on simulated models.")
    p.add_argument("dir", metavar="DIR", help="the folder to create")
    p.add_argument("--template", default="default", choices=list(TEMPLATES),
                   help="default: a flow, two agents, a dataset and two experiments; showcase: an experiment for "
                        "every question kind and every kind of variant, over flows that use every node kind")
    p.add_argument("--package", default=None, metavar="NAME",
                   help="the project's Python package name (default: DIR's name as an identifier)")
    p.set_defaults(handler=run_new)


def run_new(args: argparse.Namespace) -> int:
    dest = Path(args.dir)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        print(f"aqven new: {args.dir} exists and is not an empty folder; nothing was written", file=sys.stderr)
        return 2
    package = args.package or package_name(args.dir)
    problem = package_problem(package, dest)
    if problem is not None:
        print(f"aqven new: {problem}; choose another name with --package NAME", file=sys.stderr)
        return 2
    written = create(dest, package, args.template)
    print(f"created {args.dir}: an AQVEN project of {len(written)} files, package {package}")
    print(f"next: aqven check {args.dir} && pytest {args.dir}")
    return 0
