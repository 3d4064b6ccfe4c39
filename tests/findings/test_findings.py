"""Finding files and FINDINGS.md: written once, proving their verdict, every edit noticed."""
import random
import re
from pathlib import Path

import pytest
import yaml

from pytest_aqven.api.check import check_root
from pytest_aqven.cli import main
from pytest_aqven.findings.files import (
    FindingsRefused,
    dump,
    finding_text,
    read_findings,
    render_findings_md,
    self_hash,
)
from pytest_aqven.findings.verify import problems
from pytest_aqven.project.loader import load_project
from pytest_aqven.series.db import Store
from pytest_aqven.stats.evidence import question_dict, question_from
from pytest_aqven.stats.model import STATISTICS_VERSION, Guardrail, Look, Pair, Threshold

from .. import findings_util as fu


def test_canonical_yaml_quotes_every_string_and_keeps_key_order():
    text = dump({"b": "x", "a": [{"k": None, "n": 1.5}], "t": True, "d": {"c1": [[0.5, 1], [0.25, 0]], "c2": [3, 4]}})
    assert text == 'b: "x"\na:\n- k: null\n  n: 1.5\nt: true\nd:\n  c1: [[0.5, 1], [0.25, 0]]\n  c2: [3, 4]\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return fu.make_project(tmp_path / "proj", {"rate_ok": {}, "rate_high": {"above": 0.99, "margin": 0.0}})


@pytest.fixture
def published(project: Path):
    conclusion = fu.finding(project)
    assert conclusion.state == "confirmed" and conclusion.finding.exists()
    return conclusion


def codes(root: Path) -> list[tuple[str, str, int | None, str]]:
    return sorted((d.code, d.file, d.line, d.message) for d in check_root(root))


def test_a_finding_carries_its_sufficient_data_and_stands(project, published):
    doc = yaml.safe_load(published.finding.read_text())
    assert doc["self_sha256"] == self_hash(doc)
    assert problems(doc, stem=published.finding.stem, folder="rate_ok", package="testproj") == []
    data = doc["data"]["variants"]["bot"]["label"]
    assert all(re.fullmatch(r"[0-9a-f]{16}", key) for key in data)      # salted hashes, never the names
    assert not re.search(r"case_\d", published.finding.read_text())
    assert sum(n for _, n in data.values()) == doc["cells"][0]["estimate"]["attempts"]
    assert doc["method"]["salt"] == "testproj/rate_ok" and doc["method"]["question"]["kind"] == "threshold"
    assert codes(project) == []


def _edit(path: Path, change, rehash: bool) -> None:
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(finding_text(doc) if rehash else dump(doc))


def _set(path: tuple, value):
    def change(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


EDITS = {
    "state, hash kept": (_set(("state",), "refuted"), False, ("self_sha256",), "the file was edited"),
    "state, hash recomputed (forged)": (_set(("state",), "refuted"), True, ("state",),
                                        "state is 'refuted', but its data give 'confirmed'"),
    "statement, forged": (lambda d: d.update(statement=d["statement"].replace("0.84", "0.94")), True, ("statement",),
                          "but its data give"),
    "a bound, forged": (lambda d: d["cells"][0]["estimate"].update(low=0.9), True, ("cells", 0, "estimate", "low"),
                        "cells[0].estimate.low is 0.9, but its data give 0.838902"),
    "a metric of the table, forged": (lambda d: d["variants"][0]["metrics"]["success_rate"].update(value=0.5), True,
                                      ("variants", 0, "metrics", "success_rate", "value"), "but its data give 1.0"),
    "the data, forged without the cells": (
        lambda d: d["data"]["variants"]["bot"]["label"].update({k: [0, 2] for k in list(d["data"]["variants"]["bot"]["label"])[:8]}),
        True, ("state",), "but its data give"),
    "the salt, forged": (_set(("method", "salt"), "testproj/other"), True, ("method", "salt"), "keyed with testproj/rate_ok"),
    "the data removed": (lambda d: d.pop("data"), True, (), "it has no data"),
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_every_edit_of_a_finding_is_tampered_at_its_line(project, published, edit):
    change, rehash, where, words = EDITS[edit]
    _edit(published.finding, change, rehash)
    doc = yaml.safe_load(published.finding.read_text())
    found = problems(doc, stem=published.finding.stem, folder="rate_ok", package="testproj")
    assert any(w == where and words in message for w, message in found), found
    diags = [d for d in check_root(project) if d.code == "E_FINDING_TAMPERED"]
    assert diags and {d.file for d in diags} == {published.finding.relative_to(project).as_posix()}
    assert all(d.line is not None for d in diags) and diags[0].message.startswith(f"finding {published.finding.name} of experiment rate_ok: ")
    # the edited finding no longer speaks: FINDINGS.md generated without it differs from the one on disk
    assert read_findings(project, "testproj") == []
    assert any(d.code == "W_FINDINGS_STALE" for d in check_root(project))


def test_a_finding_of_earlier_statistics_stands_and_says_what_todays_would_decide(project, published):
    """A finding written before `method.statistics` (version 1) whose sentence today's statistics word another way
    is intact, not tampered: W_FINDING_METHOD_CHANGED says what today's would decide. The same edit claimed by
    today's version is a forgery, as before."""
    doc = yaml.safe_load(published.finding.read_text())
    assert doc["method"]["statistics"] == STATISTICS_VERSION
    today = doc["statement"]

    def earlier(d):
        d["method"].pop("statistics")
        d["statement"] = "bot: label is 1.00 (95% CI 0.80 to 1.00) against above 0.5 with margin 0: as release 1 said."
    _edit(published.finding, earlier, True)
    diags = check_root(project)
    assert not [d for d in diags if d.code == "E_FINDING_TAMPERED"], diags
    (changed,) = [d for d in diags if d.code == "W_FINDING_METHOD_CHANGED"]
    assert changed.file == published.finding.relative_to(project).as_posix() and changed.line is not None
    assert (f"decided with statistics version 1: {doc['state']}; today's version {STATISTICS_VERSION} would decide its "
            f"data as {doc['state']}: {today}") in changed.message
    assert read_findings(project, "testproj") != []           # it stands
    _edit(published.finding, _set(("method", "statistics"), STATISTICS_VERSION), True)
    assert [d.code for d in check_root(project) if d.code == "E_FINDING_TAMPERED"] == ["E_FINDING_TAMPERED"]


def test_a_renamed_or_moved_finding_is_tampered(project, published):
    renamed = published.finding.with_name("00000000-0000-4000-8000-000000000000.yaml")
    published.finding.rename(renamed)
    assert ("E_FINDING_TAMPERED", renamed.relative_to(project).as_posix()) in [(d.code, d.file) for d in check_root(project)]
    moved = project / "experiments" / "rate_high" / "findings" / published.finding.name
    moved.parent.mkdir(parents=True)
    renamed.rename(moved)
    messages = [d.message for d in check_root(project) if d.code == "E_FINDING_TAMPERED"]
    assert any("it names experiment rate_ok, but lies in the findings of experiment rate_high" in m for m in messages)


def test_a_deleted_finding_is_reported_and_rebuilt_from_the_database(project, published, capsys):
    text = published.finding.read_text()
    published.finding.unlink()
    found = codes(project)
    assert [c[0] for c in found] == ["E_FINDING_TAMPERED", "W_FINDINGS_STALE"]
    assert "the project database recorded it, but the file is missing" in found[0][3]
    assert main(["findings", "rebuild", str(project)]) == 0
    assert published.finding.read_text() == text and codes(project) == []
    assert "restored experiments/rate_ok/findings/" in capsys.readouterr().out


FINDINGS_MD_EDITS = {
    "line added": lambda t: t + "- **confirmed** `made_up`: everything works.\n",
    "line changed": lambda t: t.replace("confirmed", "refuted", 1),
    "line removed": lambda t: "\n".join(l for l in t.splitlines() if not l.startswith("- ")) + "\n",
    "emptied": lambda t: "",
}


@pytest.mark.parametrize("edit", list(FINDINGS_MD_EDITS) + ["deleted"])
def test_every_edit_of_findings_md_is_stale_and_never_overwritten_by_the_next_run(project, published, edit):
    md = project / "FINDINGS.md"
    if edit == "deleted":
        md.unlink()
    else:
        md.write_text(FINDINGS_MD_EDITS[edit](md.read_text()))
    before = md.read_text() if md.exists() else None
    stale = [d for d in check_root(project) if d.code == "W_FINDINGS_STALE"]
    assert len(stale) == 1 and stale[0].file == "FINDINGS.md" and "aqven findings rebuild" in stale[0].hint
    if edit == "deleted":
        assert stale[0].message == "FINDINGS.md is missing"
        return
    # the next held-out series decides, records and writes its own finding, but keeps the hand-made text
    series_id, records = fu.held_out(project, "rate_high")
    with pytest.raises(FindingsRefused) as refused:
        fu.decide_and_publish(project, series_id, records)
    assert refused.value.code == "W_FINDINGS_STALE"
    assert md.read_text() == before
    assert len(list((project / "experiments").glob("*/findings/*.yaml"))) == 2
    assert main(["findings", "rebuild", str(project)]) == 0
    assert codes(project) == []
    assert md.read_text() == render_findings_md(project, read_findings(project, "testproj"))


def test_a_tampered_finding_stops_the_next_run_from_dropping_its_line(project, published):
    _edit(published.finding, _set(("state",), "refuted"), True)
    series_id, records = fu.held_out(project, "rate_high")
    md_before = (project / "FINDINGS.md").read_text()
    with pytest.raises(FindingsRefused) as refused:
        fu.decide_and_publish(project, series_id, records)
    assert refused.value.code == "E_FINDING_TAMPERED"
    assert (project / "FINDINGS.md").read_text() == md_before
    # rebuild restores an edited finding only after a person's typed confirmation (tests/cli/test_findings_rebuild.py)
    assert main(["findings", "rebuild", str(project)]) == 2


def test_findings_md_layout(project):
    fu.finding(project, "rate_ok")
    fu.finding(project, "rate_ok")          # a second look at the same cases
    fu.finding(project, "rate_high", passed=fu.passes_with(0.6))
    md = (project / "FINDINGS.md").read_text()
    assert md == render_findings_md(project, read_findings(project, "testproj"))
    assert md.split("\n\n")[:3] == ["# Findings", "Generated by aqven from experiments/*/findings/*.yaml. Do not "
                                    "edit this file: run a new series on holdout cases instead.", "## mislabel"]
    lines = [l for l in md.splitlines() if "`rate_ok`" in l]
    assert len(lines) == 2 and all("Confirmed in 2 of 2 holdout looks." in l for l in lines)
    assert re.search(r"^- \*\*refuted\*\* `rate_high`: bot: label is 0\.\d+ \(95% CI .*\. Scope: holdout, 21 × 2, "
                     r"sim:tiny, \d{4}-\d\d-\d\d\. \[finding\]\(experiments/rate_high/findings/[0-9a-f-]+\.yaml\)$",
                     md, re.M)
    assert codes(project) == []


def test_findings_md_counts_the_looks_of_a_question_per_judge_and_old_findings_by_their_judge_checks(project):
    """A finding written before `scope.judges` was recorded speaks for its judge checks: a new look of the same
    judge counts with it, a look of another judge apart; its line keeps the words it had."""
    judge = {"agent": "critic", "model": "fake:critic-1", "inference": "grade", "prompt_sha256": "a" * 64}

    def look(series: str, state: str, day: int, judges: list | None, prompt: str = "a") -> tuple[Path, dict]:
        checks = [{"check": "grade", **judge, "prompt_sha256": prompt * 64, "validated_by": None}]
        scope = {"split": "holdout", "cases": 20, "repeats": 1, "case_names_sha256": "same cases",
                 "finished_at": f"2026-01-0{day}T00:00:00+00:00", **({"judges": judges} if judges is not None else {})}
        return (project / f"experiments/graded/findings/{series}.yaml",
                {"experiment": "graded", "series": series, "state": state, "statement": f"look {series}",
                 "variants": [{"models": ["fake:bot-1"]}], "judges": checks, "scope": scope})

    old = look("s1", "confirmed", 1, None)
    assert render_findings_md(project, [old]).splitlines()[-1] == (
        "- **confirmed** `graded`: look s1. Scope: holdout, 20 × 1, fake:bot-1, 2026-01-01. "
        "[finding](experiments/graded/findings/s1.yaml)")
    same = look("s2", "refuted", 2, [judge])
    other = look("s3", "confirmed", 3, [{**judge, "prompt_sha256": "b" * 64}], prompt="b")
    lines = render_findings_md(project, [old, same, other]).splitlines()[-3:]
    assert lines == [
        "- **confirmed** `graded`: look s1. Scope: holdout, 20 × 1, fake:bot-1, 2026-01-01. Confirmed in 1 of 2 "
        "holdout looks of this judge; 1 look of another judge counted apart. [finding](experiments/graded/findings/s1.yaml)",
        "- **refuted** `graded`: look s2. Scope: holdout, 20 × 1, fake:bot-1, judge fake:critic-1, 2026-01-02. Confirmed "
        "in 1 of 2 holdout looks of this judge; 1 look of another judge counted apart. "
        "[finding](experiments/graded/findings/s2.yaml)",
        "- **confirmed** `graded`: look s3. Scope: holdout, 20 × 1, fake:bot-1, judge fake:critic-1, 2026-01-03. "
        "Confirmed in 1 of 1 holdout looks of this judge; 2 looks of another judge counted apart. "
        "[finding](experiments/graded/findings/s3.yaml)"]


@pytest.mark.parametrize("copies", [20, pytest.param(200, marks=pytest.mark.slow)])
def test_the_same_records_under_other_series_ids_and_arrival_orders_give_the_same_finding(project, copies):
    """Byte for byte, once the series id itself is set aside (it names the file and is hashed)."""
    project_obj = load_project(project)
    series_id, records = fu.held_out(project, passed=fu.passes_with(0.8))
    reference = fu.decide_and_publish(project, series_id, records)
    expected = _without_series(reference.finding.read_text(), series_id)
    shuffler = random.Random(1)
    store = Store(project)
    for i in range(copies):
        other = str(__import__("uuid").UUID(int=shuffler.getrandbits(128), version=4))
        with store.transaction() as db:   # a copy of the series under another id, every attempt saved again
            row = db.raw.execute("SELECT experiment_id, flow_id, dataset_id, split, question, plan_key, created_at, record "
                             "FROM aqven_series WHERE series_id = ?", (series_id,)).fetchone()
            db.raw.execute("INSERT INTO aqven_series (series_id, experiment_id, flow_id, dataset_id, split, question, status, "
                       "plan_key, created_at, record) VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, ?)",
                       (other, *row[:5], f"copy-{i}", row[6], row[7]))
        mine = [{**r, "series_id": other} for r in records]
        shuffler.shuffle(mine)
        fu.save(store, mine)
        conclusion = fu.decide_and_publish(project, other, mine)
        assert conclusion.state == reference.state
        assert _without_series(conclusion.finding.read_text(), other).replace("holdout_looks: %d" % (i + 2), "holdout_looks: 1") == expected
    store.close()
    assert project_obj.package == "testproj"


def _without_series(text: str, series_id: str) -> str:
    return "\n".join(l for l in text.replace(series_id, "<series>").splitlines() if not l.startswith("self_sha256:"))


@pytest.mark.parametrize("question", [
    Threshold("label", above=0.7, margin=0.02),
    Pair("noninferior", "large", "small", "intent", 0.1, None, (Guardrail("cost_of_pass", 0.2, "lower", True),)),
    Pair("compare", "a", "b", "intent"),
    Look(),
], ids=["threshold", "noninferior", "compare", "look"])
def test_a_finding_method_reads_back_its_question(question):
    """A finding's method names its question; verifying the finding decides that same question again."""
    assert question_from(question_dict(question)) == question


def test_a_salt_of_another_package_is_a_rename_not_a_forgery(project, published):
    """The package was renamed since the finding (or its salt edited to another package's): the finding's
    verdict still follows from its data, and W_HALVES_MOVED says its halves are not today's."""
    _edit(published.finding, _set(("method", "salt"), "oldname/rate_ok"), True)
    doc = yaml.safe_load(published.finding.read_text())
    assert problems(doc, stem=published.finding.stem, folder="rate_ok", package="testproj") == []
    [moved] = [d for d in check_root(project) if d.severity == "error" or d.code == "W_HALVES_MOVED"]
    assert moved.code == "W_HALVES_MOVED" and "package oldname is now testproj, which draws other halves" in moved.message
