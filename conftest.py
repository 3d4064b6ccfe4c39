import importlib
import os
import pkgutil
import tempfile
from pathlib import Path

import pytest

import pytest_aqven

pytest_plugins = ["pytester"]

# pytester's in-process runs drop every module they imported when they end, and numpy (scipy's too) cannot
# be imported twice in one process; the plugin imports its heavy parts lazily (docs/performance.md), so the
# test process imports every module of the package, and scipy.special, once, for every in-process run to share.
# A module of an optional extra (storage/postgres.py needs `[postgres]`) is left out where the extra is absent:
# README command 1 runs `pytest example_project` here with no extra installed.
OPTIONAL_EXTRAS = {"psycopg"}
for _module in pkgutil.walk_packages(pytest_aqven.__path__, "pytest_aqven."):
    try:
        importlib.import_module(_module.name)
    except ModuleNotFoundError as error:
        if error.name not in OPTIONAL_EXTRAS:
            raise
importlib.import_module("scipy.special")

# Most of the suite's time is Python processes it starts (pytester subprocesses, xdist workers, the CLI), and
# each compiles the whole package again when PYTHONDONTWRITEBYTECODE is set (as in some containers): they
# share compiled bytecode in a cache outside the source tree instead (about 0.6 s CPU less per process).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) and not os.environ.get("PYTHONPYCACHEPREFIX"):
    os.environ["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), f"pytest-aqven-pycache-{os.getuid()}")


SUITE = Path(__file__).parent / "tests"


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """The whole suite (`pytest`, `pytest tests`, `pytest -m slow`) runs on two xdist workers: most of its
    time is processes it starts and waits for. Not a file or test of it, not `pytest example_project`
    (README command 1), and never over an explicit `-n`, `--tx` or `--pdb`. A file or a test named on the
    command line runs whole, its `slow` tests too, unless `-m` is given there."""
    option = config.option
    named = config.args and all(arg.split("::")[0].endswith(".py") for arg in config.args)
    if named and not hasattr(config, "workerinput") and not any(
            arg.startswith(("-m", "--markexpr")) for arg in config.invocation_params.args):
        option.markexpr = ""        # addopts' `-m 'not slow'` is for the whole suite
    if hasattr(config, "workerinput") or getattr(option, "numprocesses", 0) is not None or option.tx \
            or option.usepdb or option.collectonly:       # an xdist worker never starts workers of its own
        return
    if [(config.invocation_params.dir / arg).resolve() for arg in config.args] == [SUITE]:
        option.numprocesses = 2
        option.dist = "worksteal" if option.dist == "no" else option.dist
