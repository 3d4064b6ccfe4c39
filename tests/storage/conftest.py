"""The backends the storage contract runs on: each a way to open databases that share one store.

A backend is added here by name; every test of test_contract.py then runs on it too. PostgreSQL is a real
server (server.py) that the test session starts once, with a database of its own for each test."""
from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from pytest_aqven import storage

from . import server as pg


@dataclass
class Backend:
    name: str
    open: Callable[[], storage.Database]       # another connection, as another process would open
    limits: Callable[[], storage.Limits]
    peek: Callable[[], AbstractContextManager[storage.Transaction | None]]


def sqlite(request: pytest.FixtureRequest, root: Path) -> Backend:
    return Backend("sqlite", lambda: storage.open_database(root), lambda: storage.limits(root),
                   lambda: storage.peek(root))


def postgresql(request: pytest.FixtureRequest, root: Path) -> Backend:
    """The store chosen as `--aqven-store` chooses it: the project's root no longer matters."""
    storage.choose(request.getfixturevalue("postgres_url"))
    request.addfinalizer(lambda: storage.choose(None))
    return Backend("postgresql", lambda: storage.open_database(root), lambda: storage.limits(root),
                   lambda: storage.peek(root))


BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Backend]] = {"sqlite": sqlite, "postgresql": postgresql}


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """The session's PostgreSQL server (one for every xdist worker); skipped, saying why, without the binaries."""
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed: pip install -e '.[test]'")
    binaries = pg.binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql; "
                    ".ci/run installs them)")
    base = tmp_path_factory.getbasetemp()
    with pg.shared(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base, binaries) as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A new, empty database of the session's server."""
    return postgres_server.url(postgres_server.new_database())


@pytest.fixture(params=sorted(BACKENDS))
def backend(request, tmp_path) -> Backend:
    return BACKENDS[request.param](request, tmp_path)


@pytest.fixture
def database(backend):
    db = backend.open()
    yield db
    db.close()
