"""`aqven series list | show | approve | cancel | export` and `aqven db check`: series steered from the terminal."""
from __future__ import annotations

import argparse
import csv
import getpass
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Callable

from .. import storage
from ..report.terminal import table
from ..series.cap import CapError, dollars, parse_usd
from ..series.db import Store, planned_attempts
from ..series.ledger import PROVIDER_UNUSABLE, approve, cancel, pause_text, series_spend, status_text
from ..series.stopping import decided_text, stop_of
from .project import NoProject, Subcommands, project_argument, project_root

EXPORT_FIELDS = ["case", "variant", "repeat", "split", "outcome", "passed", "error_code", "cost_usd",
                 "check_cost_usd", "unpriced_calls", "latency_ms", "tokens_in", "tokens_out", "started_at",
                 "finished_at"]


def add_series(commands: Subcommands) -> Subcommands:
    p = commands.add_parser("series", help="list, read, approve, cancel and export the series of a project",
                            description="The series of the project around --path (the folder holding aqven.yaml).")
    sub = p.add_subparsers(dest="series_command", required=True, metavar="SUBCOMMAND")
    ls = sub.add_parser("list", help="every series, newest first")
    _path(ls)
    ls.set_defaults(handler=run_list)
    show = sub.add_parser("show", help="status, spend, cap, pause and verdict of one series; --case: one case's attempts",
                          description="Status, spend, cap, pause and verdict of one series. With --case NAME, every "
                                      "attempt of that case (each variant and repeat, or --variant / --repeat) with its "
                                      "full trace. Held-out cases are never shown one by one: --reveal shows them to a "
                                      "person who asks explicitly.")
    show.add_argument("series_id", help="the series id (or a unique prefix)")
    show.add_argument("--case", default=None, metavar="NAME", help="print this case's attempts with their full traces")
    show.add_argument("--variant", default=None, metavar="V", help="with --case: only this variant")
    show.add_argument("--repeat", type=int, default=None, metavar="R", help="with --case: only this repeat")
    show.add_argument("--format", choices=("text", "json"), default="text",
                      help="with --case: readable text (default) or the raw attempt records as JSON")
    show.add_argument("--reveal", action="store_true",
                      help="with --case on a held-out series: show the held-out case anyway (for a person who asks)")
    _path(show)
    show.set_defaults(handler=run_show)
    ap = sub.add_parser("approve", help="continue a series that waits for approval (a person, on a terminal)",
                        description="A person continues a series awaiting approval under a higher cap (double the "
                                    "old one unless another is typed). Needs an interactive terminal and a typed "
                                    "confirmation; then the same pytest command resumes the series.")
    ap.add_argument("series_id")
    ap.add_argument("--cap", default=None, metavar="USD", help="the new cap (default: double the old one)")
    _path(ap)
    ap.set_defaults(handler=run_approve)
    cancel_p = sub.add_parser("cancel", help="stop a series: no new attempt starts, its verdict is invalid")
    cancel_p.add_argument("series_id")
    _path(cancel_p)
    cancel_p.set_defaults(handler=run_cancel)
    ex = sub.add_parser("export", help="one row per finished attempt",
                        description="One row per finished attempt (its case, checks with their reasons, cost, "
                                    "latency, error). Held-out cases are never shown one by one: a held-out "
                                    "series is exported only with --reveal, for a person who asks explicitly.")
    ex.add_argument("series_id")
    ex.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    ex.add_argument("--out", default=None, metavar="FILE", help="write to FILE instead of stdout")
    ex.add_argument("--reveal", action="store_true",
                    help="export a held-out series anyway (for a person who asks)")
    _path(ex)
    ex.set_defaults(handler=run_export)
    return sub


def add_series_decide(series_commands: Subcommands) -> None:
    p = series_commands.add_parser(
        "decide", help="decide a series from its recorded attempts, as the pytest run does",
        description="Decide a series from the attempts the project database holds, as the pytest run that ran "
                    "them does at its end (the same verdict, with the intervals the series was decided with), "
                    "record it, publish its finding, and print the verdict. Nothing runs; a series already decided "
                    "keeps its verdict and finding.")
    p.add_argument("series_id", help="the series id (or a unique prefix)")
    project_argument(p)
    p.set_defaults(handler=run_series_decide)


def run_series_decide(args: argparse.Namespace) -> int:
    from ..api.decide import decide
    from ..project.loader import load_project

    def body(args: argparse.Namespace) -> int:
        store = _store(args)
        series, root = _series(store, args.series_id), store.root
        decided = decide(load_project(root), series["series_id"], family=series.get("family") or "robust")
        if decided.error is not None:
            print(f"aqven series decide: {decided.error}", file=sys.stderr)
            return 1
        conclusion, _ = decided.parts()
        print(f"{conclusion.experiment} series {conclusion.series_id} ({conclusion.split}, "
              f"{conclusion.done}/{conclusion.total} attempts)")
        if conclusion.verdict is None and series["status"] not in ("awaiting_approval", "cancelled"):
            print(f"verdict open: {conclusion.done} of {conclusion.total} attempts finished; the pytest command that "
                  "started the series continues it")
            if missing := unrecorded_line(store, series):
                print(missing)
            return 1
        print(decided.section())
        if conclusion.finding is not None:
            print(f"finding: {Path(conclusion.finding).relative_to(root).as_posix()}")
        if decided.refused is not None:
            print(f"aqven series decide: the finding is recorded in the project database but its files were not "
                  f"written:\n{decided.refused}", file=sys.stderr)
            return 1
        return 0 if conclusion.verdict is not None else 1
    return _run(body, args)


def add_db(commands: Subcommands) -> None:
    p = commands.add_parser("db", help="the project database")
    sub = p.add_subparsers(dest="db_command", required=True, metavar="SUBCOMMAND")
    check = sub.add_parser("check", help="full integrity check of the project database (or of FILE); of a "
                                         "PostgreSQL store: reachable, credentials taken, schema version")
    check.add_argument("file", nargs="?", default=None, metavar="FILE",
                       help="a database file (default: .aqven/aqven.sqlite of the project around --path)")
    _path(check)
    check.set_defaults(handler=run_db_check)
    migrate = sub.add_parser("migrate", help="bring the store's schema to this release's (a PostgreSQL store: "
                                             "once, before the shards of a CI run start)")
    _path(migrate)
    migrate.set_defaults(handler=run_db_migrate)


def _path(p: argparse.ArgumentParser) -> None:
    project_argument(p)


class Refused(Exception):
    pass


def _store(args: argparse.Namespace) -> Store:
    from ..project.loader import package_of
    try:
        root = project_root(args)
    except NoProject as exc:
        raise Refused(str(exc)) from None
    if not storage.exists(root):
        raise Refused(f"{root} has no series yet ({storage.database_path(root)} does not exist)")
    try:
        storage.preflight(root)
        storage.check_project(root, package_of(root))
    except storage.StorageError as exc:
        raise Refused(str(exc)) from None
    store = Store(root)
    args.__dict__.setdefault("opened_stores", []).append(store)
    return store


def _series(store: Store, prefix: str) -> dict:
    with store.read() as db:
        rows = db.series_ids(prefix)
    if not rows:
        raise Refused(f"no series {prefix} in {store.db.location}")
    if len(rows) > 1:
        raise Refused(f"{prefix} names {len(rows)} series: give more of the id")
    return store.known_series(rows[0])


def _run(fn: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """A closed pipe (`| head`) goes up to cli.main, which ends quietly; the stores the command opened close."""
    try:
        return fn(args)
    except Refused as exc:
        print(f"aqven series: {exc}", file=sys.stderr)
        return 2
    finally:
        for store in args.__dict__.pop("opened_stores", []):
            store.close()


def _counts(store: Store, series: dict) -> tuple[int, int]:
    with store.read() as db:
        done = db.count_finished(series["series_id"])
    return done, planned_attempts(series)


def unrecorded_line(store: Store, series: dict, shown: int = 6) -> str | None:
    """The attempts of an undecided series that the database holds no record of (still to run, running now, or
    lost with a runner that went down): named, the first `shown` in plan order; a held-out series' only counted
    by variant (held-out cases are never named one by one)."""
    if series["status"] not in ("running", "awaiting_approval"):
        return None
    with store.read() as db:
        finished = db.finished_keys(series["series_id"])
    missing = [(v, c, r) for v in series["variants"] for c in series["cases"] for r in range(1, series["repeats"] + 1)
               if (v, c, r) not in finished]
    if not missing:
        return None
    head = f"not recorded: {len(missing)} attempt{'s' if len(missing) != 1 else ''}"
    if series["split"] == "holdout":
        by_variant = {v: sum(1 for m in missing if m[0] == v) for v in series["variants"]}
        return f"{head} ({', '.join(f'{v} {n}' for v, n in by_variant.items() if n)}; held-out cases are not named)"
    names = ", ".join(f"{v} {c} #{r}" for v, c, r in missing[:shown])
    return f"{head}: {names}" + (f" and {len(missing) - shown} more" if len(missing) > shown else "")


def run_list(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        store = _store(args)
        with store.read() as db:
            rows = db.series_ids()
        if not rows:
            print("no series")
            return 0
        lines: list[tuple[str, ...]] = [("series", "experiment", "half", "status", "attempts", "spend", "verdict")]
        for series_id in rows:
            s = store.known_series(series_id)
            done, total = _counts(store, s)
            spent = series_spend(store, series_id)
            lines.append((series_id, s["experiment_id"], s["split"], status_text(s), f"{done}/{total}",
                          spent.text(s.get("cap_usd")), (s.get("verdict") or {}).get("state") or "-"))
        print("\n".join(table(lines)))
        return 0
    return _run(body, args)


HELD_OUT_REFUSAL = ("held-out cases are never shown one by one (whoever reads them starts tuning to them, and the "
                    "half stops being held out); --reveal shows them to a person who asks explicitly")


def run_show(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        store = _store(args)
        s = _series(store, args.series_id)
        if args.case is None:
            if args.variant is not None or args.repeat is not None or args.reveal or args.format != "text":
                raise Refused("--variant, --repeat, --format and --reveal go with --case NAME")
            return _show_series(store, s)
        return _show_case(store, s, args)
    return _run(body, args)


def _show_case(store: Store, s: dict, args: argparse.Namespace) -> int:
    """Every finished attempt of one case (narrowed by --variant / --repeat), with its trace."""
    sid, held_out = s["series_id"], s["split"] == "holdout"
    if held_out and not args.reveal:
        raise Refused(f"series {sid} ran held-out cases: {HELD_OUT_REFUSAL}")
    if args.case not in s["cases"]:
        raise Refused(f"series {sid} has no case {args.case!r}; its {len(s['cases'])} cases include "
                      f"{', '.join(s['cases'][:8])}{', ...' if len(s['cases']) > 8 else ''}")
    if args.variant is not None and args.variant not in s["variants"]:
        raise Refused(f"series {sid} has no variant {args.variant!r}; its variants: {', '.join(s['variants'])}")
    if args.repeat is not None and not 1 <= args.repeat <= s["repeats"]:
        raise Refused(f"series {sid} has repeats 1 to {s['repeats']}, not {args.repeat}")
    with store.read() as db:
        records = db.finished_attempts(sid, case=args.case, variant=args.variant, repeat=args.repeat)
    order = {v: i for i, v in enumerate(s["variants"])}
    records.sort(key=lambda r: (order.get(r["variant"], len(order)), r["repeat"]))
    if not records:
        raise Refused(f"series {sid} has no finished attempt of case {args.case!r}"
                      + (f" variant {args.variant}" if args.variant is not None else "")
                      + (f" repeat {args.repeat}" if args.repeat is not None else ""))
    if held_out:       # on stderr too, so that it is seen when the JSON goes to a file
        print(f"revealing held-out data of series {sid}, case {args.case}, as asked with --reveal: "
              f"do not tune the flow to what it shows", file=sys.stderr if args.format == "json" else sys.stdout)
    if args.format == "json":
        print(json.dumps(records, ensure_ascii=False, indent=1, default=str))
        return 0
    from ..record import AttemptRecord
    from ..series.attempt_text import attempt_lines
    print(f"series {sid}: case {args.case}, {len(records)} attempt{'s' if len(records) != 1 else ''}")
    for record in records:
        print()
        print("\n".join(attempt_lines(AttemptRecord.from_wire(record))))
    return 0


def _show_series(store: Store, s: dict) -> int:
    done, total = _counts(store, s)
    spent = series_spend(store, s["series_id"])
    print(f"series {s['series_id']}")
    print(f"  experiment {s['experiment_id']} on {s['split']}, status {status_text(s)}")
    print(f"  attempts {done}/{total} ({len(s['cases'])} cases × {s['repeats']} repeats × "
          f"{len(s['variants'])} variants)")
    print(f"  spend {spent.text(s.get('cap_usd'))}" + (f", {spent.running} running" if spent.running else ""))
    if missing := unrecorded_line(store, s):
        print(f"  {missing}")
    if s.get("project_cap_usd") is not None:
        print(f"  project cap {dollars(s['project_cap_usd'])} ({s.get('project_cap_source')})")
    if s.get("approved_by"):
        print(f"  approved by {s['approved_by']}")
    if s["status"] == "awaiting_approval":
        print(f"  {pause_text(s['series_id'], s, spent)}")
    verdict = s.get("verdict")
    if verdict and verdict.get("state"):
        print(f"  verdict {verdict['state']} ({verdict.get('reason') or '-'}): {verdict['text']}")
    elif verdict:
        print(f"  no verdict: {verdict['text']}")
    outcomes = _outcomes(store, s["series_id"])
    if outcomes:
        print("  outcomes " + ", ".join(f"{k} {n}" for k, n in outcomes))
    if s["split"] == "holdout":
        print(f"  {HELD_OUT_REFUSAL}")
    else:
        print("  --case NAME prints one case's attempts with their full traces")
    return 0


def _outcomes(store: Store, series_id: str) -> list[tuple[str, int]]:
    """How many finished attempts ended in each outcome: an aggregate, shown for held-out series too."""
    with store.read() as db:
        return db.outcome_counts(series_id)


def run_approve(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        store = _store(args)
        s = _series(store, args.series_id)
        sid = s["series_id"]
        if s["status"] != "awaiting_approval":
            raise Refused(f"series {sid} is {s['status']}, not awaiting approval: nothing to approve")
        if (s.get("pause") or {}).get("reason") == PROVIDER_UNUSABLE:     # no cap to raise: a fix to make
            raise Refused(f"nothing to approve: {pause_text(sid, s)}")
        if stop_of(s) is not None:      # decided: the run that stopped it (or the same command) decides it
            raise Refused(f"nothing to approve: {decided_text(sid, s['pause'])}; the same command decides it")
        if not (sys.stdin.isatty() and sys.stdout.isatty()):
            raise Refused("approve needs a person at an interactive terminal and a typed confirmation "
                          "(an agent can start a series but never continue one); run it in a terminal")
        old = Decimal(str(s.get("cap_usd", "1")))
        reason = (s.get("pause") or {}).get("reason")
        # cap_above_project: approving the cap that was asked for; spend_near_cap: double the old cap
        default = old if reason == "cap_above_project" else old * 2
        print(pause_text(sid, s, series_spend(store, sid)))
        if args.cap is not None:
            cap = _cap(args.cap, old, reason)
        else:
            typed = input(f"New cap in USD [{dollars(default).removeprefix('$')}]: ").strip()
            cap = _cap(typed, old, reason) if typed else default
        answer = input(f"Type yes to continue series {sid} under a cap of {dollars(cap)}: ").strip().lower()
        if answer != "yes":
            raise Refused("not approved (the confirmation was not yes): the series still waits")
        won, held = approve(store, sid, cap, getpass.getuser())
        held_cap = Decimal(str(held["cap_usd"] or cap))
        if not won:         # what the database holds now, not what this command asked for
            state = f"it is {held['status']}"
            if held["status"] == "running":
                state += f" under a cap of {dollars(held_cap)}" + (f" (approved by {held['approved_by']})"
                                                              if held["approved_by"] else "")
            after = ("the same pytest command resumes it" if held["status"] == "running" else
                     "a rerun starts a new series" if held["status"] == "cancelled" else "nothing to approve")
            print(f"aqven series: not approved: another change to series {sid} won while you confirmed: {state}; "
                  f"{after}", file=sys.stderr)
            return 1
        print(f"approved: series {sid} continues under a cap of {dollars(held_cap)}; run the same pytest command "
              f"to resume it")
        return 0
    return _run(body, args)


def _cap(text: str, old: Decimal, reason: str | None) -> Decimal:
    try:
        cap = parse_usd(text, "cap")
    except CapError as exc:
        raise Refused(str(exc)) from None
    if reason == "spend_near_cap" and cap <= old:
        raise Refused(f"the new cap must be above the old {dollars(old)}")
    return cap


def run_cancel(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        store = _store(args)
        s = _series(store, args.series_id)
        if not cancel(store, s["series_id"], "aqven series cancel"):
            raise Refused(f"series {s['series_id']} is {s['status']}: only a running or waiting series is cancelled")
        print(f"cancelled: series {s['series_id']}; no new attempt starts and its verdict is invalid")
        return 0
    return _run(body, args)


def run_export(args: argparse.Namespace) -> int:
    def body(args: argparse.Namespace) -> int:
        store = _store(args)
        s = _series(store, args.series_id)
        sid = s["series_id"]
        if s.get("split") == "holdout" and not args.reveal:
            raise Refused(f"series {sid} ran held-out cases: {HELD_OUT_REFUSAL}")
        with store.read() as db:
            records = db.finished_attempts(sid, by_finish=True)
        if s.get("split") == "holdout":
            print(f"revealing held-out data of series {sid} ({len(records)} attempts), as asked with --reveal: "
                  "do not tune the flow to what it shows", file=sys.stderr)
        checks = sorted({c for r in records for c in r.get("checks", {})})
        out = open(args.out, "w", encoding="utf-8", newline="") if args.out else sys.stdout
        try:
            if args.format == "jsonl":
                for r in records:
                    r.pop("trace", None)
                    out.write(json.dumps(r, sort_keys=True) + "\n")
            else:
                writer = csv.writer(out)
                writer.writerow(EXPORT_FIELDS + [f"check:{c}" for c in checks])
                for r in records:
                    writer.writerow([r.get(f) for f in EXPORT_FIELDS] +
                                    [(r.get("checks", {}).get(c) or {}).get("value") for c in checks])
        finally:
            if args.out:
                out.close()
        return 0
    return _run(body, args)


def _root_or_none(args: argparse.Namespace) -> Path | None:
    try:
        return project_root(args)
    except NoProject as exc:
        print(f"aqven db: {exc}", file=sys.stderr)
        return None


def _check_server() -> int:
    """A PostgreSQL store: reachable, the credentials taken, its schema this release's (0), older (1, `aqven db
    migrate` or the next run brings it up), newer (1), or no answer (2)."""
    try:
        version = storage.schema_version(Path("."))
    except storage.StorageError as exc:
        print(str(exc).removeprefix("pytest-aqven: ").replace("; nothing was run.", "."), file=sys.stderr)
        return 2
    where = storage.location(Path("."))
    if version is None:
        print(f"{where}: reachable, no aqven tables yet (the first run or `aqven db migrate` creates schema "
              f"version {storage.LATEST})")
        return 0
    if version > storage.LATEST:
        print(f"{where}: schema version {version} is newer than this pytest-aqven's ({storage.LATEST}): upgrade it")
        return 1
    if version < storage.LATEST:
        print(f"{where}: schema version {version}, this pytest-aqven's is {storage.LATEST}: run `aqven db migrate`")
        return 1
    print(f"{where}: ok (schema version {version})")
    return 0


def run_db_migrate(args: argparse.Namespace) -> int:
    root = Path(".") if storage.chosen() else _root_or_none(args)
    if root is None:
        return 2
    try:
        before, now = storage.migrate(root)
    except storage.StorageError as exc:
        print(str(exc).removeprefix("pytest-aqven: ").replace("; nothing was run.", "."), file=sys.stderr)
        return 1 if "newer" in str(exc) else 2
    was = "a new store" if before is None else ("already current" if before == now else f"was {before}")
    print(f"{storage.location(root)}: schema version {now} ({was})")
    return 0


def run_db_check(args: argparse.Namespace) -> int:
    if args.file and Path(args.file).is_dir():      # a project's folder, as `aqven check DIR` takes it: its database
        args.project, args.file = args.file, None
    if storage.chosen() and not args.file:
        return _check_server()
    if args.file:
        path = Path(args.file)
    else:
        root = _root_or_none(args)
        if root is None:
            return 2
        path = storage.database_path(root)
    if not path.exists():
        print(f"aqven db check: {path} does not exist", file=sys.stderr)
        return 2
    problem = storage.check_file(path, full=True)
    version = storage.file_version(path) if problem is None else None
    if version is not None and version > storage.LATEST:
        print(f"{path}: schema version {version} is newer than this pytest-aqven's ({storage.LATEST}): upgrade it")
        return 1
    if problem is None:
        print(f"{path}: ok (integrity_check)")
        return 0
    print(f"{path}: damaged: {problem}")
    return 1
