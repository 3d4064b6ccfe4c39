"""The suite's two tiers (docs/performance.md#the-test-suite), kept by the root conftest.py: the whole suite
or a folder leaves the slow tests out, a file or test named on the command line runs whole unless `-m` is
given there."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FILE = "tests/storage/test_runners.py"      # every test of it is slow


def summary(*args: str) -> str:
    """The last line of `pytest --collect-only -q ARGS`, run from the repository as a contributor does."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.slow       # three pytest processes, each importing the whole package
def test_a_named_file_runs_whole_and_a_folder_its_quick_tests():
    assert "deselected" not in summary(FILE), summary(FILE)
    assert "deselected" not in summary(f"{FILE}::test_two_runners_make_the_calls_of_one_run_and_write_one_finding")
    assert "deselected" in summary(FILE, "-m", "not slow")
    assert "deselected" in summary("tests/storage")
