"""`aqven findings rebuild` restores an edited finding from the project database after a person types yes at
an interactive terminal, as the hint of E_FINDING_TAMPERED says; without a terminal, a yes, or a text in the
database, nothing is written."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

from pytest_aqven.api.check import check_root
from pytest_aqven.cli import main

from .. import findings_util as fu
from ..faults import drive
from ..findings.test_findings import _edit, _set


def rebuild_on_a_terminal(root, answers: list[str]) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pytest_aqven.cli", "findings", "rebuild", str(root)],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    return drive(proc, master, answers=answers)


def edited_finding(tmp_path):
    root = fu.make_project(tmp_path / "proj", {"rate_ok": {}})
    finding = fu.finding(root).finding
    text = finding.read_text()
    _edit(finding, _set(("state",), "refuted"), True)
    assert [d.code for d in check_root(root) if d.severity == "error"] == ["E_FINDING_TAMPERED"]
    return root, finding, text


def test_an_edited_finding_is_restored_after_a_typed_yes(tmp_path):
    root, finding, text = edited_finding(tmp_path)
    code, out = rebuild_on_a_terminal(root, ["yes"])
    rel = finding.relative_to(root).as_posix()
    assert code == 0, out
    assert (f"{rel} was edited (state is 'refuted', but its data give 'confirmed'); the project database holds the "
            "text aqven wrote") in out
    assert "Type yes to overwrite this finding with the text the project database recorded:" in out
    assert f"restored {rel} from the project database (it was edited)" in out
    assert finding.read_text() == text and check_root(root) == []


def test_without_yes_or_a_terminal_nothing_is_written(tmp_path, capsys):
    root, finding, _ = edited_finding(tmp_path)
    edited = finding.read_text()
    code, out = rebuild_on_a_terminal(root, ["no"])
    assert code == 2 and "not restored (the confirmation was not yes): nothing was written" in out
    assert main(["findings", "rebuild", str(root)]) == 2          # stdin is not a terminal here
    assert "needs a person at an interactive terminal and a typed confirmation" in capsys.readouterr().err
    assert finding.read_text() == edited


def test_an_edited_finding_the_database_never_recorded_is_reported(tmp_path, capsys):
    root, finding, _ = edited_finding(tmp_path)
    (root / ".aqven" / "aqven.sqlite").unlink()          # a fresh clone: the finding is committed, the database not
    edited = finding.read_text()
    assert main(["findings", "rebuild", str(root)]) == 1
    out = capsys.readouterr().out
    assert "error E_FINDING_TAMPERED: state is 'refuted', but its data give 'confirmed'" in out
    assert "the project database has no text of this finding: restore it with git checkout" in out
    assert finding.read_text() == edited
