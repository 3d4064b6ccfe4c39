"""The plugin's options and ini values: declared, checked once at configure (pytest.UsageError on bad
input), so the rest of the plugin reads `config.option` alone. Imports nothing heavy."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..project.paths import PROJECT_FILE, find_root  # noqa: F401  (PROJECT_FILE: plugin/__init__.py reads it here)

FAILING = ("refuted", "inconclusive", "invalid", "open")
STATES = ("confirmed", "refuted", "inconclusive", "signal", "invalid", "open")   # open: no verdict (yet)


def add(parser: pytest.Parser) -> None:
    group = parser.getgroup("aqven", "AQVEN experiments")
    group.addoption("--aqven-holdout", action="store_true", default=False,
                    help="run the held-out cases and write findings (default: the working cases)")
    group.addoption("--aqven-cases", type=int, default=None, metavar="N",
                    help="cases per series, overriding plan.cases")
    group.addoption("--aqven-repeats", type=int, default=None, metavar="N",
                    help="repeats per case, overriding plan.repeats (1 to 20)")
    group.addoption("--aqven-fail-on", default=None, metavar="STATES",
                    help="comma-separated verdicts that fail a held-out run; open: a series left without a verdict "
                         "(paused, or attempts not run) (default: refuted,inconclusive,invalid,open)")
    group.addoption("--aqven-intervals", choices=("robust", "model"), default=None,
                    help="robust: model-based interval hulled with a distribution-free one (default); "
                         "model: the model-based interval alone")
    group.addoption("--aqven-concurrency", type=int, default=None, metavar="N",
                    help="attempts in flight per process (default 1; with -n it multiplies)")
    group.addoption("--aqven-stop-early", action="store_true", default=None,
                    help="stop a series as soon as the distribution-free bound decides its verdict (same error "
                         "rates); the attempts and held-out cases it did not need are not spent")
    group.addoption("--aqven-cap", default=None, metavar="USD",
                    help="this run's series cap in USD; above the project cap the series waits for approval")
    group.addoption("--aqven-new-series", action="store_true", default=False,
                    help="start a new series instead of continuing an unfinished one (which is cancelled); "
                         "held out: only on held-out cases no finding used")
    group.addoption("--aqven-respend-holdout", action="store_true", default=False,
                    help="run held-out cases that already gave a finding again (a new look at the same cases, "
                         "recorded in its finding)")
    group.addoption("--aqven-json", default=None, metavar="PATH",
                    help="write every series of the session (verdict, cells, intervals, spend, finding) as JSON")
    group.addoption("--aqven-summary", default=None, metavar="FILE",
                    help="append the verdicts as a Markdown table to FILE (a CI step summary: $GITHUB_STEP_SUMMARY)")
    group.addoption("--aqven-progress", type=float, default=None, metavar="SECONDS",
                    help="a progress line (attempts, spend of cap, time left) every SECONDS of a run (default 30; 0: none)")
    group.addoption("--aqven-record", action="store_true", default=False,
                    help="call the models and record every call in cassettes under <project>/cassettes")
    group.addoption("--aqven-record-missing", action="store_true", default=False,
                    help="replay recorded calls; call the models only for calls missing from the cassettes")
    group.addoption("--aqven-replay", action="store_true", default=False,
                    help="answer every model call from the cassettes, offline; a missing call is cassette_miss")
    group.addoption("--aqven-store", default=None, metavar="URL",
                    help="keep the series in this PostgreSQL database (postgresql://user@host/db, or ref:env/NAME), "
                         "shared by every machine of the run; a password only through the environment "
                         "(default: AQVEN_STORE, else SQLite in <project>/.aqven/)")
    # the options with a lasting meaning, typed (pytest >= 8.4): the command line wins over the ini file
    parser.addini("aqven_fail_on", "verdicts that fail a held-out run (one per line, or comma-separated)",
                  type="linelist", default=list(FAILING))
    parser.addini("aqven_intervals", "robust or model", default="robust")
    parser.addini("aqven_concurrency", "attempts in flight per process", type="int", default=1)
    parser.addini("aqven_stop_early", "stop a series as soon as its verdict is decided (as --aqven-stop-early)",
                  type="bool", default=False)
    parser.addini("aqven_progress", "seconds between progress lines (0: none)", type="float", default=30.0)
    parser.addini("aqven_json", "write every series of the session as JSON to this path", default="")
    parser.addini("aqven_summary", "append the verdicts as a Markdown table to this file", default="")
    parser.addini("aqven_cassettes", "record, record_missing or replay (as --aqven-record, ...)", default="")
    parser.addini("aqven_store", "the PostgreSQL URL of the series store, without a password (as --aqven-store)",
                  default="")


def check(config: pytest.Config) -> frozenset[str]:
    """Every option checked (the ini values filled in where the command line left one unset); returns the
    verdicts that fail a held-out run (--aqven-fail-on)."""
    cases, repeats = config.getoption("aqven_cases"), config.getoption("aqven_repeats")
    if cases is not None and cases < 1:
        raise pytest.UsageError("--aqven-cases must be at least 1")
    if repeats is not None and not 1 <= repeats <= 20:
        raise pytest.UsageError("--aqven-repeats must be between 1 and 20")
    from_ini = _from_ini(config)
    _choose_store(config)
    if not 1 <= config.option.aqven_concurrency <= 1024:
        where = "aqven_concurrency (ini)" if "aqven_concurrency" in from_ini else "--aqven-concurrency"
        raise pytest.UsageError(f"{where} must be between 1 and 1024, not {config.option.aqven_concurrency}")
    if config.getoption("aqven_cap") is not None:
        from ..series.cap import CapError, parse_usd
        try:
            parse_usd(config.getoption("aqven_cap"), "--aqven-cap")
        except CapError as exc:
            raise pytest.UsageError(str(exc)) from None
    if config.getoption("aqven_respend_holdout") and not config.getoption("aqven_holdout"):
        raise pytest.UsageError("--aqven-respend-holdout goes with --aqven-holdout")
    if config.getoption("aqven_respend_holdout") and config.getoption("aqven_new_series"):
        raise pytest.UsageError("--aqven-respend-holdout and --aqven-new-series exclude each other: the one runs the "
                                "spent held-out cases again, the other only fresh ones")
    if sum(map(bool, (config.getoption("aqven_record"), config.getoption("aqven_record_missing"),
                      config.getoption("aqven_replay")))) > 1:
        raise pytest.UsageError("--aqven-record, --aqven-record-missing and --aqven-replay exclude each other")
    return _fail_on(config)


def _ini(config: pytest.Config, name: str) -> Any:
    """An ini value as pytest types it; a value of the wrong type is a usage error naming the key and the value."""
    try:
        return config.getini(name)
    except (TypeError, ValueError) as exc:
        raise pytest.UsageError(f"{name} (ini): {exc}") from None


def _from_ini(config: pytest.Config) -> set[str]:
    """Each option the command line left unset takes its ini value (typed, checked here once), so the rest of
    the plugin reads `config.option` alone; returns the names that came from the ini file."""
    opt, from_ini = config.option, set()
    for name in ("aqven_concurrency", "aqven_progress", "aqven_intervals", "aqven_json", "aqven_summary",
                 "aqven_stop_early"):
        if getattr(opt, name) is None:
            setattr(opt, name, _ini(config, name) or None)
            from_ini.add(name)
    opt.aqven_concurrency = opt.aqven_concurrency or 1
    opt.aqven_progress = 30.0 if opt.aqven_progress is None else opt.aqven_progress
    if opt.aqven_intervals not in (None, "robust", "model"):
        raise pytest.UsageError(f"aqven_intervals (ini): {opt.aqven_intervals!r} is neither robust nor model")
    opt.aqven_intervals = opt.aqven_intervals or "robust"
    mode = _ini(config, "aqven_cassettes")
    if mode not in ("", "record", "record_missing", "replay"):
        raise pytest.UsageError(f"aqven_cassettes (ini): {mode!r} is none of record, record_missing, replay")
    if mode and not (opt.aqven_record or opt.aqven_record_missing or opt.aqven_replay):
        setattr(opt, f"aqven_{mode}", True)
    return from_ini


def _choose_store(config: pytest.Config) -> None:
    """The series store of this process (and of each xdist worker, which reads the same options): the command
    line, else the ini value, else the environment variable AQVEN_STORE, else SQLite in each project."""
    import os  # noqa: PLC0415

    from .. import storage  # noqa: PLC0415
    from . import internals  # noqa: PLC0415
    given = [(config.getoption("aqven_store"), "--aqven-store"), (_ini(config, "aqven_store"), "aqven_store (ini)"),
             (os.environ.get(storage.ENV), storage.ENV)]
    value, source = next(((v, s) for v, s in given if v), (None, storage.ENV))
    try:
        storage.choose(storage.store_setting(value, source), say=internals.past_capture(config))
    except storage.StorageError as exc:
        raise pytest.UsageError(str(exc)) from None


def _fail_on(config: pytest.Config) -> frozenset[str]:
    raw = config.getoption("aqven_fail_on")
    lines = [raw] if raw is not None else _ini(config, "aqven_fail_on")
    states = frozenset(s.strip() for line in lines for s in str(line).split(",") if s.strip())
    unknown = states - set(STATES)
    if unknown:
        where = "--aqven-fail-on" if raw is not None else "aqven_fail_on (ini)"
        raise pytest.UsageError(f"{where}: unknown verdict {', '.join(sorted(unknown))} "
                                f"(the verdicts: {', '.join(STATES)})")
    return states


def project_roots(config: pytest.Config) -> list[Path]:
    roots = []
    for arg in config.args or [str(config.invocation_params.dir)]:
        path = Path(config.invocation_params.dir, arg.split("::")[0])
        found = find_root(path) if path.exists() else None
        if found is None and path.is_dir():
            found_below = [p.parent for p in path.glob("*/aqven.yaml")] + [p.parent for p in path.glob("aqven.yaml")]
            roots += found_below
        elif found is not None:
            roots.append(found)
    return list(dict.fromkeys(roots))
