"""One database, one project: a store records the package of the project whose series it holds (by its first
series), and refuses another project with one message naming both, at the session start (exit 4) and in every
`aqven series` command (exit 2), before anything is run or written: on PostgreSQL (two projects pointed at
one database) and on SQLite (a `.aqven/` copied from another project)."""
from __future__ import annotations

import os
import shutil

import psycopg
import pytest

from .. import faults


def two_projects(tmp_path):
    """(cwd of project A, cwd of project B): the same files, B's package another name."""
    a, b = tmp_path / "a", tmp_path / "b"
    faults.make(a, cases=8)
    shutil.copytree(a, b)
    yaml = b / "proj" / "aqven.yaml"
    yaml.write_text(yaml.read_text().replace(f'package: "{faults.PACKAGE}"', 'package: "otherproj"'))
    return a, b


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
@pytest.mark.slow
def test_a_store_that_holds_another_projects_series_is_refused_with_one_message(tmp_path, request, store):
    a, b = two_projects(tmp_path)
    env = {"AQVEN_STORE": request.getfixturevalue("postgres_url") if store == "postgresql" else ""}
    first = faults.run(a, "--aqven-holdout", env=env)
    assert first.returncode == 0, first.stdout
    if store == "sqlite":       # a copied .aqven/: the other project's database
        shutil.copytree(a / "proj" / ".aqven", b / "proj" / ".aqven")
    second = faults.run(b, "--aqven-holdout", env=env)
    out = second.stdout + second.stderr
    message = "holds the series of the project with package 'faultproj', and "
    assert second.returncode == 4 and out.count(message) == 1, out
    assert "is the project with package 'otherproj': one database holds one project" in out
    assert "Traceback" not in out and faults.calls(b / "proj") == [] and faults.finding_files(b / "proj") == []
    assert not (b / "proj" / "FINDINGS.md").exists()
    for command in (["series", "list"], ["findings", "rebuild"]):
        done = faults.aqven(b, *command, "--project", "proj", env={**os.environ, **env})
        assert done.returncode == 2 and message in done.stderr, (command, done.stdout + done.stderr)
    assert faults.finding_files(b / "proj") == []
    if store == "postgresql":   # A's series untouched: nothing of B's cancelled or joined it
        with psycopg.connect(env["AQVEN_STORE"], autocommit=True) as conn:
            assert conn.execute("SELECT status FROM aqven_series").fetchall() == [("done",)]
    again = faults.run(a, "--aqven-holdout", env=env)      # project A goes on as before
    assert again.returncode == 0 and "(holdout, nothing ran): confirmed" in again.stdout, again.stdout


@pytest.mark.slow
def test_two_projects_on_one_database_each_in_its_own_schema_keep_their_series_apart(tmp_path, postgres_url):
    """The documented way to share a server: a schema per project, chosen in the URL (options=-csearch_path)."""
    a, b = two_projects(tmp_path)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA proj_a")
        conn.execute("CREATE SCHEMA proj_b")
    for cwd, schema in ((a, "proj_a"), (b, "proj_b")):
        url = f"{postgres_url}&options=-csearch_path%3D{schema}"
        run = faults.run(cwd, "--aqven-holdout", env={"AQVEN_STORE": url})
        assert run.returncode == 0 and "rate_ok (holdout, nothing ran)" not in run.stdout, run.stdout
        assert faults.calls(cwd / "proj") and len(faults.finding_files(cwd / "proj")) == 1
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM proj_a.aqven_project UNION ALL "
                            "SELECT value FROM proj_b.aqven_project").fetchall() == [("faultproj",), ("otherproj",)]
        assert conn.execute("SELECT to_regclass('public.aqven_series')").fetchone() == (None,)
