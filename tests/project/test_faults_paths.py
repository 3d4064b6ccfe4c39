"""Files outside the project are never read, sent or written: a path that resolves outside the module root
(through `..`, an absolute path or a symlink) is an `aqven check` error, and the run refuses it too."""
from __future__ import annotations

import json

import pytest

from pytest_aqven.api.check import check_project
from pytest_aqven.findings.files import FindingsRefused, finding_files, write_finding_file
from pytest_aqven.project import coderefs
from pytest_aqven.project.loader import load_project

from .. import faults, projects
from ..conftest import XDIST
from ..engine.test_llm import OK, project
from ..engine_projects import run

SECRET = faults.SECRET


def escape(kind: str, tmp_path):
    """(project root, the file the diagnostic names) for one way out of the project."""
    return faults.escape(kind, tmp_path), faults.ESCAPES[kind]


KINDS = ["instructions", "instructions_root", "fragment", "include", "prompt", "experiment_prompt", "code", "dataset",
         "findings", "media"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_path_out_of_the_project_is_an_aqven_check_error(tmp_path, kind):
    root, file = escape(kind, tmp_path)
    diagnostics, per_experiment = check_project(load_project(root))
    errors = [d for d in diagnostics + [d for ds in per_experiment.values() for d in ds] if d.severity == "error"]
    assert {d.file for d in errors} == {file}, [d.render() for d in errors]
    assert len(errors) == (8 if kind == "media" else 1)       # a media file: once for each case that names it
    for error in errors:
        assert error.code == ("E_CODE_REF_UNRESOLVED" if kind == "code" else "E_PATH_OUTSIDE")
        assert "outside the project" in error.message, error.render()


# each kind in one of the two modes (xdist's workers in the slow step)
@pytest.mark.parametrize("kind,mode", [pytest.param(kind, mode, marks=[pytest.mark.slow] if mode == "n2" else [])
                                       for kind, mode in [("instructions", "no-xdist"), ("fragment", "n2"),
                                                          ("dataset", "no-xdist"), ("findings", "n2")]])
def test_a_run_with_a_path_out_of_the_project_calls_no_model_and_writes_nothing_outside(tmp_path, kind, mode):
    root, file = escape(kind, tmp_path)
    result = faults.run(tmp_path, "--aqven-holdout", *XDIST[mode])
    assert result.returncode != 0 and "E_PATH_OUTSIDE" in result.stdout and "Traceback" not in result.stdout
    assert faults.calls(root) == [] and faults.leaks(root) == 0
    assert list((tmp_path / "outside").rglob("*.yaml")) == ([tmp_path / "outside" / "reviews.yaml"]
                                                            if kind == "dataset" else [])


# --- refused at run time too (the engine alone, without aqven check) ----------------------------

def _leaky(tmp_path, package, **kw):
    outside = faults.outside(tmp_path)
    return project(tmp_path / "p", package, **kw), outside


def test_instructions_out_of_the_project_are_refused_by_the_engine(tmp_path):
    p, _ = _leaky(tmp_path, "escinstr", agent_extra={"instructions": "../../outside/secret.txt"})
    result = run(p, "qa", {"text": "hi", "ids": []})
    assert result.error.code == "prompt_invalid" and "outside the project" in result.error.message
    assert "refused" in result.error.message and SECRET not in json.dumps(result.to_dict())


@pytest.mark.parametrize("how", ["symlink", "dots"])
def test_an_include_out_of_the_project_is_refused_by_the_engine(tmp_path, how):
    name = "fragments/tone" if how == "symlink" else "../outside/secret"
    p, outside = _leaky(tmp_path, f"escinc{how}", prompt=f'{{% include "{name}" %}} {{{{ text }}}}')
    faults.link(p.root / "fragments" / "tone.md", outside / "secret.md")
    result = run(p, "qa", {"text": "hi", "ids": []})
    assert result.error.code == "prompt_invalid" and "outside the project" in result.error.message


def test_a_prompt_file_out_of_the_project_is_refused_by_the_engine(tmp_path):
    p, outside = _leaky(tmp_path, "escprompt")
    faults.link(p.root / "flows/qa/nodes/answer/answer.prompt.md", outside / "secret.md")
    result = run(p, "qa", {"text": "hi", "ids": []})
    assert result.error.code == "prompt_invalid" and "outside the project" in result.error.message


def test_a_variant_text_out_of_the_project_is_refused_by_the_engine(tmp_path):
    variants = {"variants": {"tone": {"on": "$in.text", "cases": {"hi": "plain"}}}}
    p, outside = _leaky(tmp_path, "escvariant", prompt="{{ variants.tone }} {{ text }}", inf_extra=variants)
    faults.link(p.root / "flows/qa/nodes/answer/answer.variants/tone/plain.md", outside / "secret.md")
    result = run(p, "qa", {"text": "hi", "ids": []})
    assert result.error.code == "prompt_invalid" and "outside the project" in result.error.message


def test_a_media_file_out_of_the_project_is_refused_by_the_engine(tmp_path):
    p, outside = _leaky(tmp_path, "escmedia", ins={"text": "Text", "photo": "Image?"}, script={"bot": [OK]})
    faults.link(p.root / "media" / "photo.png", outside / "secret.txt")
    result = run(p, "qa", {"text": "hi", "photo": {"$media": "image/png", "file": "@root/media/photo.png"}})
    assert result.error.code == "media_unavailable" and "outside the project" in result.error.message


def test_a_code_reference_out_of_the_project_is_refused_by_its_resolver(tmp_path):
    outside = faults.outside(tmp_path)
    root = projects.make(tmp_path / "p", 2, package="escref")
    code = root / "flows/rate/nodes/clean/clean.py"
    faults.link(code, outside / "evil.py")
    with pytest.raises(coderefs.CodeRefError, match="outside the project"):
        coderefs.resolve("clean", package="escref", root=root, here=code)
    faults.link(root / "helpers.py", outside / "evil.py")
    with pytest.raises(coderefs.CodeRefError, match="outside the project"):
        coderefs.resolve("@root.helpers:clean", package="escref", root=root, here=code)
    with pytest.raises(coderefs.CodeRefError, match="not a module name"):
        coderefs.resolve("@here..evil:clean", package="escref", root=root, here=code)


def test_a_finding_is_never_written_or_read_through_a_link_out_of_the_project(tmp_path):
    outside = faults.outside(tmp_path)
    root = projects.make(tmp_path / "p", 2)
    (outside / "findings").mkdir()
    (outside / "findings" / "planted.yaml").write_text("state: confirmed\n")
    faults.link(root / "experiments/rate_ok/findings", outside / "findings")
    with pytest.raises(FindingsRefused) as refused:
        write_finding_file(root, "rate_ok", "s1", "x: 1\n")
    assert refused.value.code == "E_PATH_OUTSIDE" and list((outside / "findings").iterdir()) == [
        outside / "findings" / "planted.yaml"]
    assert finding_files(root) == []


def test_the_snapshot_never_reads_a_file_out_of_the_project(tmp_path):
    from pytest_aqven.experiments import plan as planning
    outside = faults.outside(tmp_path)
    root = projects.make(tmp_path / "p", 4)
    faults.link(root / "fragments" / "tone.md", outside / "secret.md")
    project = load_project(root)
    series = planning.plan(project, project.experiments["rate_ok"], "dev")
    taken = planning.take(project, series)
    assert all(SECRET.encode() not in data for data in taken.sources.files.values())
    assert not any("outside" in str(p) for p in taken.sources.files)


@pytest.mark.parametrize("link", [".aqven", ".aqven/aqven.sqlite"])
def test_a_project_database_linked_out_of_the_project_is_refused_and_nothing_is_written(tmp_path, xdist, link):
    """`.aqven` or its database a symlink to another application's SQLite file: one message at the session
    start (exit 4) and from every aqven command (exit 2); no model called, the other file unchanged."""
    import sqlite3
    root = faults.make(tmp_path, cases=8)
    other = tmp_path / "app"
    other.mkdir()
    with sqlite3.connect(other / "aqven.sqlite") as conn:        # another application's database
        conn.execute("CREATE TABLE users (name TEXT)")
    before = (other / "aqven.sqlite").read_bytes()
    faults.link(root / link, other if link == ".aqven" else other / "aqven.sqlite")
    run = faults.run(tmp_path, "--aqven-holdout", *xdist)
    assert run.returncode == 4 and faults.calls(root) == [], run.stdout + run.stderr
    message = f"{root / link} is a symlink (to {other if link == '.aqven' else other / 'aqven.sqlite'})"
    assert (run.stdout + run.stderr).count(message) == 1 and "Traceback" not in run.stdout + run.stderr
    listed = faults.aqven(tmp_path, "series", "list", "--project", "proj")
    assert listed.returncode == 2 and message in listed.stderr, listed.stderr
    assert (other / "aqven.sqlite").read_bytes() == before and sorted(p.name for p in other.iterdir()) == \
        ["aqven.sqlite"]
