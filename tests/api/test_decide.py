"""`aqven series decide <id>`: the library decision (pytest_aqven/api/decide.py) the pytest session end makes,
from the terminal: the same verdict and finding as the pytest run that ran the series."""
from __future__ import annotations

import json

from pytest_aqven.cli import main

from .. import projects
from ..plugin.test_plugin import make


def _run(pytester, *args: str) -> dict:
    """A pytest run of the project; returns its one series' --aqven-json entry."""
    pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-json=report.json", *args)
    (entry,) = json.loads((pytester.path / "report.json").read_text())["series"]
    return entry


def decide(capsys, root, series_id: str) -> tuple[int, list[str], str]:
    capsys.readouterr()          # what the pytest run printed
    code = main(["series", "decide", series_id, "--project", str(root)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_deciding_a_held_out_series_again_gives_the_verdict_and_finding_of_the_pytest_run(pytester, capsys, xdist):
    root = make(pytester, projects.cases(16), repeats=2, above=0.5)
    entry = _run(pytester, "--aqven-holdout", *xdist)
    assert entry["verdict"]["state"] == "confirmed" and entry["finding_path"]
    finding = root / entry["finding_path"]
    written, index = finding.read_bytes(), (root / "FINDINGS.md").read_bytes()
    code, out, err = decide(capsys, root, entry["series_id"][:8])      # a prefix names it too
    assert (code, err) == (0, "")
    assert out[0] == f"rate_ok series {entry['series_id']} (holdout, {entry['attempts']['done']}/" \
                     f"{entry['attempts']['total']} attempts)"
    assert out[1] == f"verdict confirmed: {entry['verdict']['sentence']}"
    assert out[-1] == f"finding: {entry['finding_path']}"
    assert finding.read_bytes() == written and (root / "FINDINGS.md").read_bytes() == index
    assert len(list(finding.parent.glob("*.yaml"))) == 1


def test_deciding_a_working_series_prints_its_verdict_and_next_step_as_the_verdict_test_shows_them(pytester, capsys):
    root = make(pytester, projects.cases(8), repeats=1, above=0.5)
    result = pytester.runpytest("proj", "-p", "no:cacheprovider", "-rA", "--aqven-json=report.json")
    (entry,) = json.loads((pytester.path / "report.json").read_text())["series"]
    code, out, _ = decide(capsys, root, entry["series_id"])
    assert code == 0
    shown = result.outlines                  # the verdict test's "aqven verdict" section (-rA)
    section = next(i for i, line in enumerate(shown) if line.strip("- ") == "aqven verdict")
    assert out[1:] == shown[section + 1:section + len(out)]
    assert out[1:] == [f"verdict {entry['verdict']['state']}: {entry['verdict']['sentence']}",
                       *(f"warning: {w}" for w in entry["warnings"]), f"next: {entry['next']}"]


def test_deciding_an_unknown_series_says_so_and_exits_2(pytester, capsys):
    root = make(pytester, projects.cases(8), repeats=1)
    _run(pytester)
    code, out, err = decide(capsys, root, "nope")
    assert (code, out) == (2, []) and err.startswith("aqven series: no series nope in ")


def test_a_tally_with_an_attempt_the_database_never_got_decides_nothing(pytester):
    """A verdict rests only on committed records: an attempt a run tallied whose finish never committed (its
    process was killed in the group commit's window) leaves the series undecided, counted or looked up."""
    import dataclasses

    from pytest_aqven.api.decide import _stored, decide
    from pytest_aqven.project.loader import load_project
    from pytest_aqven.series.db import Store
    from pytest_aqven.series.tally import SeriesTally

    root = make(pytester, projects.cases(8), repeats=1)
    entry = _run(pytester)
    sid = entry["series_id"]
    store = Store(root)
    records = _stored(store, sid)
    store.close()
    project = load_project(root)
    assert decide(project, sid, SeriesTally.of(records), went_down=("gw0",)).error is None
    lost = dataclasses.replace(records[0], repeat=5)                # reported, never committed
    for kw in ({}, {"went_down": ("gw0",)}, {"reread": True}):
        decided = decide(project, sid, SeriesTally.of([*records, lost]), **kw)
        assert decided.conclusion is None and decided.error is not None, kw
        assert decided.error.startswith(f"series {sid} is not decided: 1 attempt this run reported is not recorded "
                                        "in the project database (")
    assert "(xdist worker gw0 went down before committing it)" in decide(
        project, sid, SeriesTally.of([*records, lost]), went_down=("gw0",)).error
    assert "(its finish was never committed)" in decide(project, sid, SeriesTally.of([*records, lost])).error
    assert "(another runner took its claim while this run was suspended and has not recorded it yet)" \
        in decide(project, sid, SeriesTally.of([*records, lost]), reread=True).error
