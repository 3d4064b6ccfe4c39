import pytest

from .compat_project import write_project

# The two ways a user runs a project where the plugin aggregates across processes (verdicts, findings, exit
# code): in one process, and on two xdist workers. The arguments go on the command line of the run.
XDIST = {"no-xdist": (), "n2": ("-n", "2")}


@pytest.fixture(params=[pytest.param(args, id=name, marks=[pytest.mark.slow] if args else []) for name, args in XDIST.items()])
def xdist(request) -> tuple[str, ...]:
    """A test that takes it runs twice: once without xdist, once with `-n 2` (its worker processes put that
    run in the `-m slow` step)."""
    return request.param


@pytest.fixture
def spoke(tmp_path):
    """A fresh copy of the showcase-shaped project of tests/compat_project.py (package spoke)."""
    return write_project(tmp_path / "spoke")
