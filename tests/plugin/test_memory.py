"""Memory flat in the number of attempts: once an attempt reported, its record, details, trace and junit
properties stay neither on its item, nor on its reports, nor in the scheduler (pytest keeps items and
reports to the end);
the controller keeps per-case tallies (tests/series/test_tally.py)."""
from __future__ import annotations

import pytest

from pytest_aqven.plugin import collect

from .. import projects


class Watch:
    def __init__(self):
        self.jobs_left = None
        self.scored = 0
        self.teardown_properties = 0
        self.carried = None
        self.as_carried = 0     # records folded that are the record their call report carried

    def pytest_aqven_attempt_scored(self, config, record):
        self.scored += 1
        self.as_carried += record is self.carried       # in one process: the record itself, no wire round trip

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.carried = getattr(report, "aqven_attempt", None)
        if report.when == "teardown" and any(name == "aqven_outcome" for name, _ in report.user_properties):
            self.teardown_properties += 1

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session):
        result = yield
        self.jobs_left = len(session.config.stash[collect.SCHEDULER].jobs)
        return result


def test_nothing_of_an_attempt_stays_after_it_reported(pytester):
    projects.make(pytester, 10, repeats=3)
    watch = Watch()
    reprec = pytester.inline_run("proj", "-p", "no:cacheprovider", "--junitxml=j.xml", "-o", "junit_family=xunit1",
                                 plugins=[watch])       # xunit1: the attempts carry junit properties
    items = [i for i in reprec.getcalls("pytest_collection_finish")[0].session.items
             if isinstance(i, collect.AttemptItem)]
    calls = [r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call" and "::verdict" not in r.nodeid]
    assert items and len(calls) == len(items) == watch.scored == watch.as_carried     # every attempt was folded
    assert all(i.record is None and i.details is None and i.user_properties == [] for i in items)
    assert not any(hasattr(r, "aqven_attempt") or hasattr(r, "aqven_details") for r in calls)
    reports = [r for r in reprec.getreports("pytest_runtest_logreport") if "::verdict" not in r.nodeid]
    assert not any(name.startswith("aqven_") for r in reports for name, _ in r.user_properties)
    assert watch.teardown_properties == len(items)    # junitxml read them on the teardown report
    assert watch.jobs_left == 0
    verdicts = [r for r in reprec.getreports("pytest_runtest_logreport") if r.nodeid.endswith("::verdict")]
    assert verdicts and all(r.passed for r in verdicts)


def _history_reading_every_record(conn, experiment_id: str, limit: int) -> list[dict]:
    """Store.history as it was: every finished record of the experiment read, then the last `limit` kept."""
    import json

    rows = conn.execute("SELECT s.series_id, s.finished_at, a.variant_id, a.case_name, a.repeat, a.record "
                        "FROM aqven_series_attempts a JOIN aqven_series s USING (series_id) WHERE s.experiment_id = ? "
                        "AND a.state = 'finished' AND s.status IN ('done', 'failed')", (experiment_id,)).fetchall()
    if not rows:
        return []
    latest = min((-finished, series) for series, finished, *_ in rows)[1]     # the latest, ties by id
    per_variant: dict[str, list[tuple]] = {}
    for series, _, variant, case, repeat, record in rows:
        if series == latest:
            per_variant.setdefault(variant, []).append((case, repeat, json.loads(record)))
    return [r for variant in sorted(per_variant) for _, _, r in sorted(per_variant[variant])[:limit]]


def test_history_reads_only_the_records_it_returns(tmp_path):
    """A launch plan's history (read at collection and by the verdict of an unfinished question) takes the
    latest finished series' attempts, the first per variant by case and repeat: the same records, in the same
    order, as reading every record of the experiment and keeping those, without holding every record of every
    earlier series in memory at once; and whatever order its attempts finished in."""
    import json
    import random

    from pytest_aqven.series.db import Store

    rng = random.Random(5)
    store = Store(tmp_path)
    times = rng.sample(range(100_000), 900)
    with store.transaction() as db:
        for s, (experiment, status, finished) in enumerate([("e", "done", 10.0), ("e", "done", 30.0),
                                                            ("f", "failed", 5.0), ("e", "running", None)]):
            db.raw.execute("INSERT INTO aqven_series (series_id, experiment_id, dataset_id, split, question, status, "
                       "plan_key, created_at, finished_at, record) VALUES (?, ?, 'd', 'dev', 'threshold', ?, 'k', 0, "
                       "?, '{}')", (f"s{s}", experiment, status, finished))
        for i, t in enumerate(times):
            series, variant = f"s{i % 4}", rng.choice("abc" if i % 4 != 1 else "bd")
            record = json.dumps({"series_id": series, "variant": variant, "n": i, "finished_at": t})
            db.raw.execute("INSERT INTO aqven_series_attempts (attempt_id, series_id, variant_id, case_name, repeat, state, "
                       "finished_at, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (str(i), series, variant, f"c{i % 37}", i, "finished" if i % 9 else "running", t, record))
    for experiment in ("e", "f", "none"):
        for limit in (1, 7, 200, 1000):
            expected = _history_reading_every_record(store.db.raw, experiment, limit)
            assert store.history(experiment, limit) == expected, (experiment, limit)
    assert {r["series_id"] for r in store.history("e")} == {"s1"}     # the latest finished one, not s3 (running)
    assert len(store.history("e", 7)) == 14       # b and d: 7 each
    store.close()


def test_deciding_does_not_scan_the_session_for_garbage(pytester):
    """While the verdicts are decided, the session's items and reports wait in gc's permanent generation (a
    full collection set off by the finding's thousands of lists would scan them all); afterwards they are
    collected as before."""
    import gc

    class FreezeWatch:
        def __init__(self):
            self.frozen = []

        def pytest_aqven_verdict(self, config, series, verdict, cells, finding_path):
            self.frozen.append(gc.get_freeze_count())

    projects.make(pytester, 6, repeats=2)
    watch = FreezeWatch()
    assert gc.get_freeze_count() == 0
    pytester.inline_run("proj", "-p", "no:cacheprovider", plugins=[watch])
    assert watch.frozen and all(n > 1000 for n in watch.frozen)
    assert gc.get_freeze_count() == 0
