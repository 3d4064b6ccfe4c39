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
    add_findings(commands)
    return parser


def add_findings(commands) -> None:
    p = commands.add_parser("findings", help="the project's findings and FINDINGS.md",
                            description="Work on the findings of the project around PATH.")
    sub = p.add_subparsers(dest="findings_command", required=True, metavar="SUBCOMMAND")
    r = sub.add_parser("rebuild", help="write back deleted findings from the project database and regenerate FINDINGS.md",
                       description="Write back every finding file the project database recorded and that is missing, "
                                   "then regenerate FINDINGS.md from the finding files (hand-made lines are replaced). "
                                   "An edited finding is never rewritten: it is reported and the command exits 1.")
    r.add_argument("path", nargs="?", default=".", metavar="PATH",
                   help="the module root or any file or folder inside it (default: .)")
    r.set_defaults(handler=run_findings_rebuild)


def _root_of(command: str, path: str) -> Path | None:
    start = Path(path)
    if not start.exists():
        print(f"aqven {command}: {path} does not exist", file=sys.stderr)
        return None
    root = find_root(start)
    if root is None:
        print(f"aqven {command}: no {PROJECT_FILE} in {path} or any folder above it; "
              f"run aqven {command} inside an AQVEN project", file=sys.stderr)
    return root


def run_findings_rebuild(args: argparse.Namespace) -> int:
    from .check.diagnostics import Diagnostic   # noqa: PLC0415
    from .findings.files import FindingsRefused   # noqa: PLC0415
    from .project.loader import load_project   # noqa: PLC0415
    from .series.findings import rebuild   # noqa: PLC0415

    root = _root_of("findings rebuild", args.path)
    if root is None:
        return 2
    project = load_project(root)
    try:
        restored, _ = rebuild(project)
    except FindingsRefused as exc:
        print(render_text([Diagnostic(exc.code, file, tuple(where), message, hint=exc.hint)
                           for file, where, message in exc.problems]))
        return 1
    for path in restored:
        print(f"restored {path.relative_to(root).as_posix()} from the project database")
    print("FINDINGS.md regenerated from the finding files")
    return 0


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
