"""The backends the storage contract runs on: each a way to open databases that share one store.

A backend is added here by name (issue 27: PostgreSQL, a server started by the session); every test of
test_contract.py then runs on it too."""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from pytest_aqven import storage


@dataclass
class Backend:
    name: str
    open: Callable[[], storage.Database]       # another connection, as another process would open
    limits: Callable[[], storage.Limits]
    peek: Callable[[], AbstractContextManager[storage.Transaction | None]]


def sqlite(root: Path) -> Backend:
    return Backend("sqlite", lambda: storage.open_database(root), lambda: storage.limits(root),
                   lambda: storage.peek(root))


BACKENDS: dict[str, Callable[[Path], Backend]] = {"sqlite": sqlite}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request, tmp_path) -> Backend:
    return BACKENDS[request.param](tmp_path)


@pytest.fixture
def database(backend):
    db = backend.open()
    yield db
    db.close()
