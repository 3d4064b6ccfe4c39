"""Through pytest: a user SystemExit and a hang are skips of their attempts, with where they happened;
the session goes on and decides the verdict."""
from pytest_aqven.experiments.split import split_of

from .. import projects

CLEAN = '''
import sys
import time


def clean(text: str) -> dict:
    if "exit" in text:
        sys.exit(3)
    if "hang" in text:
        time.sleep(60)
    return {"text": text.strip()}
'''


def test_a_system_exit_and_a_hang_are_skipped_attempts_and_the_session_goes_on(pytester):
    root = pytester.path / "proj"
    names = [f"c{i:02d}" for i in range(40)]
    dev = [n for n in names if split_of("engineplugin", "reviews", n) == "dev"]
    cases = [(dev[0], "exit"), (dev[1], "hang"), *[(n, "fine") for n in dev[2:8]]]
    projects.make(root, cases, repeats=1, package="engineplugin")
    (root / "flows/rate/nodes/clean/clean.py").write_text(CLEAN)
    node = root / "flows/rate/nodes/clean/clean.node.yaml"
    node.write_text(node.read_text() + "limits:\n  seconds: 1\n")
    result = pytester.runpytest("proj", "-rs", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1] *: code_invalid: node clean: clean raised SystemExit: 3 at clean.py:8",
        "SKIPPED [[]1] *: timeout: node clean: clean did not return within 1 s",
    ], consecutive=False)
    assert "rate_ok (dev," in result.stdout.str() and "Traceback" not in result.stdout.str()
    outcomes = result.parseoutcomes()
    assert outcomes["skipped"] == 2 and outcomes["passed"] >= 4
