"""pytest_aqven.record.AttemptRecord: one wire form for the database row and the xdist report, and rows of
the old shape (before records had a version) read through the one upgrade function."""
from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from collections import Counter

import pytest

from pytest_aqven.cli import main
from pytest_aqven.record import VERSION, AttemptRecord, CheckScore, upgrade

from . import projects
from .plugin.test_plugin import make

ROW = {"version": VERSION, "series_id": "s1", "experiment": "e", "variant": "v", "case": "c", "repeat": 2,
       "split": "dev", "outcome": "infra_error", "passed": None,
       "checks": {"label": {"state": "skipped", "value": None, "reason": None}},
       "cost_usd": 0.002, "check_cost_usd": 0.0005, "unpriced_calls": 1, "cost_known": False, "latency_ms": 12.5,
       "tokens_in": 10, "tokens_out": 3, "schema_valid_first_try": None, "models": {"answer": "m"},
       "error_code": "timeout", "error_message": "no answer in 5 s", "error_public": "no answer in 5 s",
       "first_failed_node": "answer", "started_at": 1.0, "finished_at": 2.0, "trace": {"nodes": []}}
# a row as versions before the record had a version wrote it: no version, no judges' spend, no cost_known,
# no models, no public error, no failed node, and a key nothing reads any more
OLD_ROW = {"series_id": "s1", "experiment": "e", "variant": "v", "case": "c", "repeat": 1, "split": "dev",
           "outcome": "ok", "passed": True, "checks": {"label": {"state": "passed", "value": 1.0}},
           "cost_usd": 0.001, "unpriced_calls": 2, "latency_ms": 3.0, "schema_valid_first_try": True,
           "error_code": None, "error_message": None, "started_at": 1.0, "finished_at": 2.0, "attempt_no": 7}


def test_a_stored_row_reads_as_a_typed_record_and_writes_back_unchanged():
    record = AttemptRecord.from_wire(ROW)
    assert record.checks == {"label": CheckScore("skipped")} and record.trace == {"nodes": []}
    assert not record.reused and record.root is None
    assert record.to_wire() == ROW
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.outcome = "ok"


def test_a_row_of_the_old_shape_is_upgraded_by_the_one_function():
    record = AttemptRecord.from_wire(OLD_ROW)
    assert record.version == VERSION
    assert (record.check_cost_usd, record.cost_known, record.models, record.error_public,
            record.first_failed_node) == (0.0, False, {}, None, None)     # 2 unpriced calls: the cost unknown
    assert record.checks["label"] == CheckScore("passed", 1.0, None)
    assert AttemptRecord.from_wire({**OLD_ROW, "unpriced_calls": 0}).cost_known is True
    assert upgrade(ROW) is ROW                                     # the current version: as it is
    assert "attempt_no" not in upgrade(OLD_ROW)


def test_an_unknown_version_or_key_is_an_error_not_a_guess():
    with pytest.raises(ValueError, match="version 3: this pytest-aqven reads versions 1 to 2"):
        AttemptRecord.from_wire({**ROW, "version": 3})
    with pytest.raises(ValueError, match=r"unknown keys: \['colour'\]"):
        AttemptRecord.from_wire({**ROW, "colour": "red"})


CONFTEST = """
import json, pathlib
import pytest

@pytest.hookimpl(optionalhook=True)
def pytest_aqven_attempt_scored(config, record):
    with (pathlib.Path(__file__).parent / "scored.jsonl").open("a") as f:
        f.write(json.dumps(record.to_wire()) + "\\n")
"""


def test_the_hook_gets_the_record_the_database_holds(pytester, xdist):
    """The record that reached the hook (through an xdist report with -n 2) is the database's row, as the
    one wire form: the same keys and values, without the trace, with what the session adds."""
    root = make(pytester, projects.cases(8), repeats=2)
    pytester.makeconftest(CONFTEST)
    pytester.runpytest("proj", "-p", "no:cacheprovider", *xdist)
    scored = [json.loads(line) for line in (pytester.path / "scored.jsonl").read_text().splitlines()]
    db = sqlite3.connect(root / ".aqven/aqven.sqlite")
    rows = {(r["variant"], r["case"], r["repeat"]): r for (text,) in db.execute(
        "SELECT record FROM aqven_series_attempts WHERE state = 'finished'") for r in [json.loads(text)]}
    db.close()
    assert len(scored) == len(rows) > 0
    for wire in scored:
        row = rows[wire["variant"], wire["case"], wire["repeat"]]
        assert row["version"] == VERSION and "trace" in row
        assert {k: v for k, v in row.items() if k != "trace"} == \
            {k: v for k, v in wire.items() if k not in ("root", "file_nodeid")}
        assert wire["root"] == str(root) and wire["file_nodeid"].endswith("experiment.yaml")


def test_a_series_stored_in_the_old_shape_decides_as_it_did(pytester, capsys):
    """Rows written before records had a version (their new keys stripped) give the same verdict."""
    root = make(pytester, projects.cases(8), repeats=2)
    pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-json=report.json")
    (entry,) = json.loads((pytester.path / "report.json").read_text())["series"]
    db = sqlite3.connect(root / ".aqven/aqven.sqlite")
    for attempt, text in db.execute("SELECT attempt_id, record FROM aqven_series_attempts").fetchall():
        old = {k: v for k, v in json.loads(text).items()
               if k not in ("version", "check_cost_usd", "cost_known", "models", "error_public", "first_failed_node")}
        db.execute("UPDATE aqven_series_attempts SET record = ? WHERE attempt_id = ?", (json.dumps(old), attempt))
    db.commit()
    db.close()
    capsys.readouterr()
    assert main(["series", "decide", entry["series_id"], "--project", str(root)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"verdict {entry['verdict']['state']}: " \
                                                      f"{entry['verdict']['sentence']}"



COUNTING = """
import os
import traceback

from pytest_aqven.record import AttemptRecord

to_wire, from_wire = AttemptRecord.to_wire, AttemptRecord.from_wire.__func__


def counted(conversion):
    caller = traceback.extract_stack()[-3].filename.replace(os.sep, "/").rpartition("pytest_aqven/")[2]
    role = os.environ.get("PYTEST_XDIST_WORKER", "controller").rstrip("0123456789")
    with open(os.path.join(os.path.dirname(__file__), "conversions.log"), "a") as log:
        log.write(f"{role} {conversion} {caller}\\n")


def counting_to_wire(self):
    counted("to_wire")
    return to_wire(self)


def counting_from_wire(cls, wire):
    counted("from_wire")
    return from_wire(cls, wire)


AttemptRecord.to_wire, AttemptRecord.from_wire = counting_to_wire, classmethod(counting_from_wire)
"""


def test_an_attempt_record_is_converted_once_at_each_boundary(pytester, xdist, monkeypatch):
    """Made as a record; its wire form written to the database (one to_wire, where it ran); crossing to the
    xdist controller as its wire form (one to_wire on the worker, one from_wire on the controller); the
    launch plan of the verdict reads the stored rows back (one from_wire each)."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)     # the suite's own worker, seen by the run below
    root = make(pytester, projects.cases(8), repeats=1)
    (root / "conftest.py").write_text(COUNTING)
    result = pytester.runpytest_subprocess("proj", "-p", "no:cacheprovider", *xdist)
    n = int(re.search(r"\(dev, (\d+)/\d+ attempts\)", result.stdout.str()).group(1))
    conversions = Counter((root / "conversions.log").read_text().splitlines())
    ran = "gw" if xdist else "controller"
    expected = Counter({f"{ran} to_wire series/scheduler.py": n, "controller from_wire series/lifecycle.py": n})
    if xdist:
        expected += Counter({"gw to_wire plugin/__init__.py": n, "controller from_wire record.py": n})
    assert conversions == expected
