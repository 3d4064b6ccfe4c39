"""The plugin installed but unused costs a pytest run nearly nothing: pytest imports pytest_aqven.plugin in
every run, so it must not import the heavy libraries; they are imported where an experiment needs them."""
from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "httpx", "aiohttp", "pydantic", "yaml", "liquid", "mcp", "genai_prices")

_LOADED = "import sys; print(' '.join(sorted({m.split('.')[0] for m in sys.modules} & set(%r))))" % (HEAVY,)


def test_importing_the_plugin_imports_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", f"import pytest_aqven.plugin; {_LOADED}"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == []


def test_the_public_names_still_import_on_use():
    out = subprocess.run([sys.executable, "-c", f"from pytest_aqven import EvalContext, ModelResponse; {_LOADED}"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert "pydantic" in out


CONFTEST = f"""
import sys

def pytest_unconfigure(config):
    loaded = sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))
    with open("loaded.txt", "a") as f:
        f.write(",".join(config.getoption("plugins")) + "|" + " ".join(loaded) + "\\n")
"""


@pytest.mark.slow
def test_a_suite_without_experiments_imports_nothing_heavy_through_the_plugin(pytester):
    """The whole run (options, collection, reports, summary) with the plugin loaded imports no heavy module
    that the same run without it (-p no:aqven) does not import."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_plain="import pytest\n\n@pytest.mark.parametrize('i', range(5))\n"
                                   "def test_trivial(i):\n    assert i >= 0\n")
    for extra in ([], ["-p", "no:aqven"]):
        pytester.runpytest_subprocess("-p", "no:cacheprovider", *extra).assert_outcomes(passed=5)
    with_plugin, without = (line.split("|") for line in
                            (pytester.path / "loaded.txt").read_text().splitlines())
    assert "no:aqven" in without[0] and "no:aqven" not in with_plugin[0]
    assert set(with_plugin[1].split()) - set(without[1].split()) == set()
