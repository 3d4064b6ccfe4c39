"""Hooks pytest-aqven calls (named pytest_aqven_*: pytest only takes hook implementations named pytest_*), for other plugins and conftest.py files (registered through pytest_addhooks).

pytest_aqven_attempt_scored and pytest_aqven_verdict run where the verdicts are decided: the only process
without xdist, the controller with it (workers never call them), so each attempt and each verdict reaches
them exactly once per session. pytest_aqven_series_start runs where attempts run: once per experiment in
each process that runs some (every xdist worker asks it: answer the same everywhere).

Implement them with `@pytest.hookimpl(optionalhook=True)`: pytest then accepts the conftest.py where
pytest-aqven is not active (`-p no:aqven`, or not installed), as it does for any plugin's own hooks.
"""
from __future__ import annotations

from typing import Any, TypedDict

import pluggy
import pytest

from ..record import AttemptRecord

hookspec = pluggy.HookspecMarker("pytest")


class SeriesStart(TypedDict):
    """What pytest_aqven_series_start is told of the series about to start."""
    experiment: str
    split: str               # dev or holdout
    root: str                # the module root
    cases: int
    repeats: int
    variants: list[str]
    attempts: int            # planned: cases x repeats x variants
    spend_cap_usd: float     # the project's cap


@hookspec
def pytest_aqven_attempt_scored(config: pytest.Config, record: AttemptRecord) -> None:
    """An attempt of the session was scored (or reused from an earlier session of its series:
    `record.reused`). `record` is the attempt record (pytest_aqven.record.AttemptRecord, frozen; its fields
    are listed in docs/reports.md; `record.to_wire()` is the dict the database stores). Held-out records are
    complete here: redaction applies to reports people read, not to code."""


@hookspec
def pytest_aqven_verdict(config: pytest.Config, series: dict[str, Any], verdict: dict[str, Any] | None,
                  cells: list[dict[str, Any]], finding_path: str | None) -> None:
    """A series of the session was decided. `series` is its entry of the --aqven-json report
    (pytest_aqven/report/report-json.schema.json: paths in it are relative); `verdict` is {state, reason, sentence} (state "none" for a look),
    None when the series is still open; `cells` the verdict's cells with their 95% intervals;
    `finding_path` the finding file written, or None."""


@hookspec(firstresult=True)
def pytest_aqven_series_start(config: pytest.Config, series: SeriesStart) -> str | None:
    """Called once per experiment in each process that runs its attempts (each xdist worker), before the
    first of them; return a reason (a
    non-empty str) to veto the start: the experiment's attempts are then skipped with
    "series not started: <reason>" and it gets no verdict. `series` holds experiment, split, root,
    cases, repeats, variants, attempts (planned) and spend_cap_usd (the project's cap). The first
    implementation that returns a reason wins."""
