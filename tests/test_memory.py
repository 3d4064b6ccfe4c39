"""Memory flat in the number of attempts: once an attempt reported, its record, details and trace stay
neither on its item, nor on its reports, nor in the scheduler (pytest keeps items and reports to the end);
the controller keeps per-case tallies (tests/test_tally.py)."""
from __future__ import annotations

import pytest

from pytest_aqven import collect

from . import projects


class Watch:
    def __init__(self):
        self.jobs_left = None
        self.scored = 0

    def pytest_aqven_attempt_scored(self, config, record):
        self.scored += 1

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session):
        result = yield
        self.jobs_left = len(session.config.stash[collect.SCHEDULER].jobs)
        return result


def test_nothing_of_an_attempt_stays_after_it_reported(pytester):
    root = pytester.path / "proj"
    projects.write(root, {**projects.dataset(projects.cases(10)), **projects.experiment(repeats=3)})
    watch = Watch()
    reprec = pytester.inline_run("proj", "-p", "no:cacheprovider", plugins=[watch])
    items = [i for i in reprec.getcalls("pytest_collection_finish")[0].session.items
             if isinstance(i, collect.AttemptItem)]
    calls = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call" and "::verdict" not in r.nodeid]
    assert items and len(calls) == len(items) == watch.scored      # every attempt was folded
    assert all(i.record is None and i.details is None for i in items)
    assert not any(hasattr(r, "aqven_attempt") or hasattr(r, "aqven_details") for r in calls)
    assert watch.jobs_left == 0
    verdicts = [r for r in reprec.getreports("pytest_runtest_logreport") if r.nodeid.endswith("::verdict")]
    assert verdicts and all(r.passed for r in verdicts)
