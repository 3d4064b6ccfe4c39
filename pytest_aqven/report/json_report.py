"""--aqven-json PATH: every series of the session as one JSON document. Its one definition is the typed model
below: the writer validates every document against it, and the schema shipped beside this module
(report-json.schema.json, `SCHEMA`) is generated from it (`python -m pytest_aqven.report.json_report` writes it;
tests/report/test_reports.py fails when the two differ)."""
from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .data import SCHEMA_VERSION

SCHEMA = Path(__file__).with_name("report-json.schema.json")
SCHEMA_ID = "https://github.com/pytest-aqven/pytest-aqven/pytest_aqven/report/report-json.schema.json"

class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Attempts(_Closed):
    done: int = Field(ge=0, description="attempts of the series finished so far")
    total: int = Field(ge=0, description="cases x repeats x variants")
    reused: int = Field(ge=0, description="finished in an earlier session of the series")
    passed: int = Field(ge=0)
    failed_checks: int = Field(ge=0, description="attempts reported as xfail")
    infra_errors: int = Field(ge=0, description="attempts reported as skipped")


class VerdictData(_Closed):
    state: Literal["confirmed", "refuted", "inconclusive", "signal", "invalid", "none"] = Field(
        description="none: a look, which gives no verdict")
    reason: str | None = Field(description="e.g. dev_split, below_mde, infra_errors, unmeasured, no_cost_bound, provider_unusable")
    sentence: str = Field(description="the sentence to quote verbatim")


class EstimateData(_Closed):
    value: float | None = Field(description="for a pair: the candidate's advantage")
    low: float | None = Field(description="95% interval; null = unbounded")
    high: float | None
    unit: str
    method: str
    family: Literal["robust", "model"]
    cases: int
    attempts: int
    degenerate: str | None


class CellData(_Closed):
    metric: str
    role: Literal["primary", "guardrail"]
    variant: str
    baseline: str | None = Field(description="null for a threshold cell")
    direction: Literal["higher_is_better", "lower_is_better"]
    bound: Literal["above", "below"] | None
    threshold: float | None
    margin: float | None
    relative: bool
    edge: float | None = Field(description="the value the interval was compared with")
    verdict: Literal["pass", "fail", "unclear"]
    decided_by: Literal["model", "betting", "exact"] | None = Field(
        description="the interval whose bound decided the cell (exact: the exact bound of perfect agreement or "
                    "all-pass data); null when unclear")
    estimate: EstimateData


class Stability(_Closed):
    always: int
    never: int
    flaky: int
    pass_hat_k: float | None
    k: int


class Spend(_Closed):
    usd: float | None = Field(description="subject and check cost of the session's attempts")
    cap_usd: float | None = Field(description="the series' own spend cap")
    unpriced_calls: int = Field(ge=0)
    lower_bound: bool = Field(description="true when some calls had no known price: usd is at least this")


class ObservedPlan(_Closed):
    value: float
    cases: int
    edge: float
    recommended_cases: int | None = Field(
        description="null: what was observed is not past the edge, or the simulated search has not run (aqven plan "
                    "runs it)")
    power: float | None
    capped: bool
    text: str


class LaunchPlanData(_Closed):
    cases: int
    repeats: int
    variants: int
    attempts: int
    available: int
    recommended_cases: int
    reason: Literal["look", "no_margin", "no_history", "short_of_cases", "wide", "enough"]
    half_width: float | None
    below_recommended: bool
    text: str = Field(description="the pre-registered figure: when the truth is one margin past the edge")
    search_pending: bool = Field(
        description="recommended_cases is the closed form: the simulated search (aqven plan) has not run")
    capped: bool = Field(description="the simulated search reached its cap below 80% power")
    observed: ObservedPlan | None = Field(
        description="the figure at the rates observed so far (the latest finished series), or null")


class SeriesData(_Closed):
    experiment: str = Field(description="the experiment id (its folder name)")
    series_id: str
    split: Literal["dev", "holdout"] = Field(description="working cases (dev) or held-out cases")
    question: Literal["look", "threshold", "compare", "noninferior"] | None
    variants: list[str]
    cases: int | None = Field(ge=0)
    repeats: int | None = Field(ge=1)
    attempts: Attempts
    verdict: VerdictData | None = Field(description="null while the series is open (not all its attempts ran); "
                                                    "see note")
    note: str | None
    cells: list[CellData]
    stability: dict[str, Stability] = Field(description="per variant, with repeats >= 2")
    spend: Spend
    launch_plan: LaunchPlanData | None
    warnings: list[str] = Field(
        description="a line per variant whose every attempt failed the same way (all schema_invalid, or all one "
                    "infrastructure code, at one node): its metric measures that failure")
    next: str | None = Field(description="what to do next, for a verdict that is not confirmed")
    project: str = Field(description="the project root (the folder of aqven.yaml), relative to pytest's rootdir")
    finding_path: str | None = Field(description="the finding file written, relative to the project root (with /)")


class JsonReport(_Closed):
    """Every series of a pytest session: its verdict, cells with 95% intervals, attempts, spend and finding.
    Held-out series carry aggregates only: no case is named."""
    model_config = ConfigDict(extra="forbid", title="pytest-aqven --aqven-json report")
    schema_version: Literal[1]
    series: list[SeriesData]


def schema() -> dict:
    """The JSON Schema (2020-12) of the report, generated from JsonReport."""
    generated = JsonReport.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **generated}


def schema_text() -> str:
    return json.dumps(schema(), indent=2, ensure_ascii=False) + "\n"


def document(entries: list[dict]) -> dict:
    """The report; a field the definition does not know, or of another type, is a bug here, raised before a file
    is written (pydantic.ValidationError)."""
    doc = {"schema_version": SCHEMA_VERSION, "series": entries}
    JsonReport.model_validate(doc)
    return doc


def write(path: Path, entries: list[dict]) -> None:
    """Atomically (a reader never sees half a file), with the user's umask as any file they write."""
    doc = document(entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


if __name__ == "__main__":     # regenerate the shipped schema from the definition
    SCHEMA.write_text(schema_text(), encoding="utf-8")
    sys.stdout.write(f"wrote {SCHEMA}\n")
