"""The PostgreSQL store from a user's side: how it is chosen, what `aqven db check` / `aqven db migrate` say, and
the one clear message (never a traceback) when the server is away, refuses the credentials or is newer."""
from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

from pytest_aqven import storage
from pytest_aqven.storage import schema

from .. import faults
from . import server as pg

AWAY = "postgresql://postgres@/aqven?host=/nonexistent-aqven-socket&port=1"


@pytest.fixture
def reset_store():
    yield
    storage.choose(None)


# --- choosing the store ---------------------------------------------------------------------------------------

def test_no_setting_is_sqlite_and_a_ref_reads_the_url_from_the_environment(monkeypatch):
    assert storage.store_setting(None, "--aqven-store") is None and storage.store_setting(" ", "ini") is None
    monkeypatch.setenv("CI_STORE", "postgresql://u:pw@db.example/aqven")
    assert storage.store_setting("ref:env/CI_STORE", "aqven_store (ini)") == "postgresql://u:pw@db.example/aqven"
    monkeypatch.delenv("CI_STORE")
    with pytest.raises(storage.StorageError, match="ref:env/CI_STORE, but the environment variable CI_STORE is "
                                                   "not set"):
        storage.store_setting("ref:env/CI_STORE", "aqven_store (ini)")


@pytest.mark.parametrize("url", ["postgresql://u:hunter2@db/aqven", "postgresql://u@db/aqven?password=hunter2"])
def test_a_password_in_a_file_or_on_the_command_line_is_refused_and_never_repeated(url):
    for source in ("aqven_store (ini)", "--aqven-store"):
        with pytest.raises(storage.StorageError, match="holds a password: a password is read from the "
                                                       "environment only") as refused:
            storage.store_setting(url, source)
        assert "hunter2" not in str(refused.value)
    assert storage.store_setting(url, storage.ENV) == url       # the environment may carry it


def test_a_store_that_is_not_a_postgresql_url_is_refused():
    with pytest.raises(storage.StorageError, match="--aqven-store is not a PostgreSQL URL"):
        storage.store_setting("mysql://db/aqven", "--aqven-store")


def test_the_ini_password_is_a_usage_error_before_anything_runs(pytester):
    pytester.makeini("[pytest]\naqven_store = postgresql://u:hunter2@db/aqven\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*aqven_store (ini) holds a password: a password is read from the environment only*"])
    assert "hunter2" not in result.stderr.str() + result.stdout.str()


# --- the server's faults: one message and an exit code --------------------------------------------------------

def run_project(tmp_path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    faults.make(tmp_path, cases=8)
    return faults.run(tmp_path, *args, env={"AQVEN_STORE": "", **(env or {})}, timeout=120)


def test_an_unreachable_server_stops_the_run_with_one_message(tmp_path):
    result = run_project(tmp_path, "--aqven-store", AWAY)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "the PostgreSQL store postgresql://postgres@/nonexistent-aqven-socket:1/aqven cannot be reached" \
        in result.stderr and "Start the server or fix --aqven-store / aqven_store / AQVEN_STORE;" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr and not faults.calls(tmp_path / "proj")


def test_refused_credentials_stop_the_run_with_one_message(tmp_path, postgres_server):
    role, _ = pg.PASSWORD_ROLE
    url = postgres_server.url(postgres_server.new_database(), role, "wrong")
    result = run_project(tmp_path, env={"AQVEN_STORE": url})
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert "refused the credentials" in result.stderr and "PGPASSWORD" in result.stderr
    assert "wrong" not in result.stderr and "Traceback" not in result.stdout + result.stderr


@pytest.mark.slow
def test_the_password_from_pgpassword_is_taken(tmp_path, postgres_server):
    role, password = pg.PASSWORD_ROLE
    result = run_project(tmp_path, "--aqven-store", postgres_server.url(postgres_server.new_database(), role),
                         env={"PGPASSWORD": password})
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(faults.calls(tmp_path / "proj")) == faults.attempts_planned(tmp_path / "proj", "dev")


def test_a_newer_schema_stops_the_run_and_changes_nothing(tmp_path, postgres_url):
    aqven(tmp_path, "db", "migrate", "--store", postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE aqven_schema_versions SET version = %s", (schema.LATEST + 1,))
    result = run_project(tmp_path, "--aqven-store", postgres_url)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR
    assert (f"was migrated by a newer pytest-aqven (schema version {schema.LATEST + 1}, this one knows "
            f"{schema.LATEST}): upgrade pytest-aqven on this machine") in result.stderr
    assert "Traceback" not in result.stdout + result.stderr and not faults.calls(tmp_path / "proj")


# --- aqven db check / migrate ---------------------------------------------------------------------------------

def aqven(cwd, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_aqven.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "AQVEN_STORE": "", **(env or {})})


@pytest.mark.slow
def test_db_check_and_migrate_on_a_server(tmp_path, postgres_url):
    where = storage.postgres.where(postgres_url)
    fresh = aqven(tmp_path, "db", "check", env={"AQVEN_STORE": postgres_url})
    assert (fresh.returncode, fresh.stdout) == (0, f"{where}: reachable, no aqven tables yet (the first run or "
                                                   f"`aqven db migrate` creates schema version {schema.LATEST})\n")
    made = aqven(tmp_path, "db", "migrate", "--store", postgres_url)
    assert (made.returncode, made.stdout) == (0, f"{where}: schema version {schema.LATEST} (a new store)\n")
    again = aqven(tmp_path, "db", "migrate", "--store", postgres_url)
    assert again.stdout == f"{where}: schema version {schema.LATEST} (already current)\n"
    ok = aqven(tmp_path, "db", "check", "--store", postgres_url)
    assert (ok.returncode, ok.stdout) == (0, f"{where}: ok (schema version {schema.LATEST})\n")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE aqven_schema_versions SET version = %s", (schema.LATEST + 1,))
    newer = aqven(tmp_path, "db", "check", "--store", postgres_url)
    assert newer.returncode == 1 and "is newer than this pytest-aqven's" in newer.stdout
    refused = aqven(tmp_path, "db", "migrate", "--store", postgres_url)
    assert refused.returncode == 1 and "migrated by a newer pytest-aqven" in refused.stderr


def test_db_check_of_an_unreachable_server_says_so(tmp_path):
    result = aqven(tmp_path, "db", "check", "--store", AWAY)
    assert result.returncode == 2 and "cannot be reached" in result.stderr and "Traceback" not in result.stderr
    assert "Start the server or fix --store / AQVEN_STORE." in result.stderr        # the CLI's options, not pytest's


def test_db_migrate_of_an_older_sqlite_file_says_from_which_version(tmp_path):
    root = faults.make(tmp_path, cases=2)
    made = aqven(root, "db", "migrate")
    assert made.stdout == f"{storage.database_path(root)}: schema version {schema.LATEST} (a new store)\n"
    assert aqven(root, "db", "migrate").stdout.endswith("(already current)\n")


def test_a_migration_renders_the_one_definition_for_postgresql():
    statements = [s for v in sorted(schema.MIGRATIONS) for s in schema.script(schema.MIGRATIONS[v], "postgresql")]
    assert not any("json_extract" in s or "AUTOINCREMENT" in s or " REAL" in s or "OR IGNORE" in s
                   for s in statements)
    assert "INSERT INTO aqven_counters VALUES ('claim_generation', 0) ON CONFLICT DO NOTHING;" in statements
    sqlite = [s for v in sorted(schema.MIGRATIONS) for s in schema.script(schema.MIGRATIONS[v], "sqlite")]
    assert any(s.lstrip().startswith("CREATE TRIGGER IF NOT EXISTS aqven_spend_total") for s in sqlite)
