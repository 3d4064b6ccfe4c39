"""The `aqven` command: one function per subcommand, so `series` and `findings` can join `check`."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .check.diagnostics import render_json, render_text
from .check.run import check_root
from .project.loader import PROJECT_FILE, find_root


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aqven", description="AQVEN projects from the terminal.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_check(commands)
    from .series.commands import add_db, add_series
    add_series(commands)
    add_db(commands)
    return parser


def add_check(commands) -> None:
    p = commands.add_parser(
        "check", help="validate a project and every experiment before a series may run it",
        description="Validate the project around PATH (the folder holding aqven.yaml, searched upward) "
                    "and print one diagnostic per problem. Exit 1 on errors, 0 otherwise.")
    p.add_argument("path", nargs="?", default=".", metavar="PATH",
                   help="the module root or any file or folder inside it (default: .)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.add_argument("--static", action="store_true",
                   help="accepted for AQVEN compatibility: this checker never runs a flow, so every check is static")
    p.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    start = Path(args.path)
    if not start.exists():
        print(f"aqven check: {args.path} does not exist", file=sys.stderr)
        return 2
    root = find_root(start)
    if root is None:
        print(f"aqven check: no {PROJECT_FILE} in {args.path} or any folder above it; "
              f"run aqven check inside an AQVEN project", file=sys.stderr)
        return 2
    diagnostics = check_root(root)
    print(render_json(diagnostics) if args.format == "json" else render_text(diagnostics))
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)      # bad usage: argparse prints it and exits with 2
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
