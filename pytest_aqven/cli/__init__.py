"""The `aqven` command: one function per subcommand, so `series` and `findings` can join `check`.

Every subcommand names its project with `--project PATH` (`check` and `findings rebuild` also as their
positional PATH, AQVEN's spelling); output survives a closed pipe and a terminal that cannot show Unicode."""
from __future__ import annotations

import argparse
import codecs
import os
import sys
from pathlib import Path

from .. import __version__
from ..api.check import check_root
from ..diagnostics import render_github, render_json, render_text
from .project import NoProject, Subcommands, project_argument, project_root


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aqven", description="AQVEN projects from the terminal.")
    parser.add_argument("--version", action="version", version=f"aqven (pytest-aqven) {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_check(commands)
    from .new import add_new
    add_new(commands)
    from .cases import add_cases
    add_cases(commands)
    from .series import add_db, add_series, add_series_decide
    add_series_decide(add_series(commands))
    add_db(commands)
    add_findings(commands)
    add_plan(commands)
    return parser


def add_findings(commands: Subcommands) -> None:
    p = commands.add_parser("findings", help="the project's findings and FINDINGS.md",
                            description="Work on the findings of the project around PATH.")
    sub = p.add_subparsers(dest="findings_command", required=True, metavar="SUBCOMMAND")
    r = sub.add_parser("rebuild", help="write back deleted or edited findings from the project database and "
                                       "regenerate FINDINGS.md",
                       description="Write back every finding file the project database recorded and that is missing, "
                                   "then regenerate FINDINGS.md from the finding files (hand-made lines are replaced). "
                                   "An edited finding gets back the text the database recorded only after a person "
                                   "types yes at an interactive terminal (else exit 2); one the database has no text "
                                   "of is reported and the command exits 1.")
    project_argument(r, positional=True)
    r.set_defaults(handler=run_findings_rebuild)


def _root_of(command: str, args: argparse.Namespace) -> Path | None:
    try:
        return project_root(args)
    except NoProject as exc:
        print(f"aqven {command}: {exc.where} does not exist" if exc.missing else
              f"aqven {command}: {exc}; run aqven {command} inside an AQVEN project", file=sys.stderr)
        return None


def run_findings_rebuild(args: argparse.Namespace) -> int:
    from ..diagnostics import Diagnostic  # noqa: PLC0415
    from ..findings.files import FindingsRefused  # noqa: PLC0415
    from ..findings.publish import edited, rebuild, restore  # noqa: PLC0415
    from ..project.loader import load_project  # noqa: PLC0415

    root = _root_of("findings rebuild", args)
    if root is None:
        return 2
    project = load_project(root)
    from .. import storage  # noqa: PLC0415
    storage.check_project(root, project.package)    # another project's findings are never written here
    restorable, lost = edited(project)
    if lost:
        print(render_text([Diagnostic("E_FINDING_TAMPERED", path.relative_to(root).as_posix(), (), why, hint=(
            "the project database has no text of this finding: restore it with git checkout, or move it aside "
            "and run a new series on holdout cases")) for path, why in lost]))
        return 1
    if restorable:
        for path, why, _ in restorable:
            print(f"{path.relative_to(root).as_posix()} was edited ({why}); the project database holds the text "
                  "aqven wrote")
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            print("aqven findings rebuild: overwriting an edited finding needs a person at an interactive terminal "
                  "and a typed confirmation; nothing was written", file=sys.stderr)
            return 2
        n = len(restorable)
        answer = input(f"Type yes to overwrite {'this finding' if n == 1 else f'these {n} findings'} with the text "
                       "the project database recorded: ").strip().lower()
        if answer != "yes":
            print("not restored (the confirmation was not yes): nothing was written", file=sys.stderr)
            return 2
        for path in restore(project, restorable):
            print(f"restored {path.relative_to(root).as_posix()} from the project database (it was edited)")
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


def add_check(commands: Subcommands) -> None:
    p = commands.add_parser(
        "check", help="validate a project and every experiment before a series may run it",
        description="Validate the project around PATH (the folder holding aqven.yaml, searched upward) "
                    "and print one diagnostic per problem. Exit 1 on errors, 0 otherwise.")
    project_argument(p, positional=True)
    p.add_argument("--format", choices=("text", "json", "github"), default="text",
                   help="output format (default: text; github: workflow annotations, one per diagnostic, then the counts)")
    p.add_argument("--static", action="store_true",
                   help="accepted for AQVEN compatibility: this checker never runs a flow, so every check is static")
    p.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    root = _root_of("check", args)
    if root is None:
        return 2
    diagnostics = check_root(root)
    if args.format == "github":
        print(render_github(diagnostics, repository_prefix(root)))
    else:
        print((render_json if args.format == "json" else render_text)(diagnostics))
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def repository_prefix(root: Path) -> str:
    """The module root's path from the repository's top level, as GitHub resolves an annotation's file:
    `GITHUB_WORKSPACE` when the root lies inside it, else the nearest folder above holding `.git`, else the
    current folder; "" when none holds the root (paths stay relative to the module root)."""
    root = root.resolve()
    workspace = os.environ.get("GITHUB_WORKSPACE")
    tops = [Path(workspace).resolve()] if workspace else []
    tops += [folder for folder in (root, *root.parents) if (folder / ".git").exists()][:1]
    tops.append(Path.cwd().resolve())
    for top in tops:
        if root.is_relative_to(top):
            relative = root.relative_to(top)
            return "" if relative == Path() else relative.as_posix()
    return ""


def add_plan(commands: Subcommands) -> None:
    p = commands.add_parser(
        "plan", help="launch plans with the simulated power search (kept for pytest --collect-only)",
        description="Print each experiment's launch plan as `pytest --collect-only` does, after running the "
                    "simulated power search that --collect-only leaves out (it takes seconds per experiment). "
                    "The result is kept in .aqven/plans/ by its inputs, so the next --collect-only shows it.")
    p.add_argument("experiments", nargs="*", metavar="EXPERIMENT", help="experiment ids (default: every experiment)")
    project_argument(p)
    p.add_argument("--holdout", action="store_true", help="plan the held-out series (default: the working cases)")
    p.add_argument("--cases", type=int, default=None, metavar="N", help="cases per series, as --aqven-cases")
    p.add_argument("--repeats", type=int, default=None, metavar="N", help="repeats per case, as --aqven-repeats")
    p.add_argument("--intervals", choices=("robust", "model"), default="robust", help="as --aqven-intervals")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes for the searches of several experiments (default: the number of CPUs)")
    p.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    import os

    from ..api.check import check_project
    from ..api.plan import plan_experiments
    from ..project.loader import load_project
    from ..report.terminal import plan_lines
    if args.cases is not None and args.cases < 1 or args.repeats is not None and not 1 <= args.repeats <= 20:
        print("aqven plan: --cases must be at least 1 and --repeats between 1 and 20", file=sys.stderr)
        return 2
    root = _root_of("plan", args)
    if root is None:
        return 2
    project = load_project(root)
    unknown = [e for e in args.experiments if e not in project.experiments]
    if unknown:
        print(f"aqven plan: no experiment {', '.join(unknown)}; the project has: "
              f"{', '.join(sorted(project.experiments)) or 'none'}", file=sys.stderr)
        return 2
    diagnostics, per_experiment = check_project(project)
    errors = [d for d in diagnostics if d.severity == "error"]
    wanted = args.experiments or sorted(project.experiments)
    runnable = []
    for experiment in wanted:
        errors += [d for d in per_experiment.get(experiment, []) if d.severity == "error"]
        if not any(d.severity == "error" for d in [*diagnostics, *per_experiment.get(experiment, [])]):
            runnable.append(experiment)
    if errors:
        print(render_text(errors))
    jobs = args.jobs or min(len(runnable), os.cpu_count() or 1)
    unplanned: list[str] = []       # why an experiment has no launch plan
    for experiment, plan in plan_experiments(root, runnable, "holdout" if args.holdout else "dev",
                                             cases=args.cases, repeats=args.repeats, family=args.intervals,
                                             jobs=jobs):
        if isinstance(plan, str):
            unplanned.append(plan)
            print(plan)
            continue
        for line, _ in plan_lines(experiment, "holdout" if args.holdout else "dev", plan):
            print(line)
    return 1 if errors or unplanned else 0


# what a terminal that cannot show them reads instead (the rest becomes "?")
ASCII = {"×": "x", "≥": ">=", "≤": "<=", "±": "+/-", "–": "-", "—": "-", "…": "...", "→": "->", "’": "'",
         "“": '"', "”": '"', "²": "^2", "µ": "u"}


def _ascii(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):     # registered for the output streams only
        raise error
    text = error.object[error.start:error.end]
    return "".join(ASCII.get(c, "?") for c in text), error.end


codecs.register_error("aqven-ascii", _ascii)
SIGPIPE_EXIT = 128 + 13     # what a shell reports for a process a closed pipe ended


STORE_COMMANDS = ("series", "db", "findings", "plan")     # the commands that read or write the series store


def _choose_store(args: argparse.Namespace) -> bool:
    """--store, else AQVEN_STORE, else the project's SQLite file; False (said on stderr) when it is refused."""
    from .. import storage
    value, source = (args.store, "--store") if getattr(args, "store", None) else (os.environ.get(storage.ENV),
                                                                                   storage.ENV)
    try:
        storage.choose(storage.store_setting(value, source), settings="--store / AQVEN_STORE")
    except storage.StorageError as exc:
        print(str(exc).removeprefix("pytest-aqven: "), file=sys.stderr)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="aqven-ascii")
    try:
        args = build_parser().parse_args(argv)      # bad usage: argparse prints it and exits with 2
        if args.command in STORE_COMMANDS and not _choose_store(args):
            return 2
        code = args.handler(args)
        sys.stdout.flush()          # inside the try: a reader that left shows here, not at exit
        return code
    except BrokenPipeError:         # `aqven ... | head`: the reader has what it wanted; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT
    except Exception as exc:
        storage = sys.modules.get("pytest_aqven.storage")      # imported by the commands that use a store
        if storage is None or not isinstance(exc, storage.StorageError):
            raise
        # a store this release cannot use (newer, another project's): its one message
        print(f"aqven {args.command}: {str(exc).removeprefix('pytest-aqven: ')}", file=sys.stderr)
        return 2
