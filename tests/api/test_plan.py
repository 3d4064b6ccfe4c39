"""Launch plans: --collect-only shows the closed form (or a search cached earlier) and never simulates, and
only for experiments that are selected; `aqven plan` runs the simulated search and caches it by its inputs."""
from __future__ import annotations

from pytest_aqven.cli import main
from pytest_aqven.series.plans import SearchCache
from pytest_aqven.stats import plan as stats_plan

from .. import projects


def make(pytester):
    return projects.make(pytester, 12, experiments={"rate_ok": {"above": 0.5, "margin": 0.1},
                                                    "rate_hi": {"above": 0.6, "margin": 0.1}})


def no_search(*args, **kwargs):
    raise AssertionError("the simulated search ran")


def test_collect_only_plans_selected_experiments_by_the_closed_form(pytester, monkeypatch):
    root = make(pytester)
    monkeypatch.setattr(stats_plan, "search_cases", no_search)
    result = pytester.runpytest("proj", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines_random([
        "rate_ok (dev): * attempts *", "rate_hi (dev): * attempts *",
        "  closed form (optimistic for these intervals); `aqven plan rate_ok` runs the simulated search *"])
    picked = pytester.runpytest("proj", "--collect-only", "-q", "-p", "no:cacheprovider", "-k", "rate_hi")
    assert [l for l in picked.outlines if l.startswith("rate_")] == [
        l for l in result.outlines if l.startswith("rate_hi")]
    none = pytester.runpytest("proj", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not aqven")
    assert "aqven launch plans" not in none.stdout.str()
    assert not (root / ".aqven").exists()


def test_aqven_plan_searches_once_and_collect_only_shows_the_cached_search(pytester, monkeypatch, capsys):
    root = make(pytester)
    assert main(["plan", "rate_ok", "--project", str(root / "experiments")]) == 0
    first = capsys.readouterr().out
    assert "rate_hi" not in first
    simulated = [l for l in first.splitlines() if l.startswith("  simulated: ")]
    assert len(simulated) == 1 and "% power to decide at " in simulated[0]
    # the search, and the cases --aqven-stop-early is expected to use at the planned cases
    assert len(list((root / ".aqven" / "plans").glob("*.json"))) == 2
    assert "with --aqven-stop-early a series of " in first

    monkeypatch.setattr(stats_plan, "search_cases", no_search)       # from here on only the cache answers
    assert main(["plan", "rate_ok", "--project", str(root)]) == 0
    assert capsys.readouterr().out == first
    result = pytester.runpytest("proj", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([*first.splitlines()[:2], simulated[0]], consecutive=True)
    result.stdout.fnmatch_lines(["rate_hi (dev): *", "*", "  closed form *`aqven plan rate_hi`*"], consecutive=True)
    # other inputs (three repeats) are another search: not taken from the cache
    again = pytester.runpytest("proj", "--collect-only", "-q", "-p", "no:cacheprovider", "--aqven-repeats", "3")
    again.stdout.fnmatch_lines(["rate_ok (dev): *", "*", "  closed form *`aqven plan rate_ok`*"], consecutive=True)


def test_aqven_plan_usage_errors(pytester, capsys):
    root = make(pytester)
    assert main(["plan", "nope", "--project", str(root)]) == 2
    assert "no experiment nope; the project has: rate_hi, rate_ok" in capsys.readouterr().err
    assert main(["plan", "--project", str(root), "--repeats", "21"]) == 2


def test_a_damaged_cache_file_reads_as_absent(tmp_path):
    cache = SearchCache(tmp_path)
    cache["inputs"] = (40, 0.81)
    assert cache.get("inputs") == (40, 0.81) and cache.get("other") is None
    next((tmp_path / ".aqven" / "plans").glob("*.json")).write_text("{not json")
    assert cache.get("inputs") is None


def test_after_a_series_the_plan_gives_the_figure_at_the_observed_rates_and_the_same_data_the_same_one(
        pytester, capsys, xdist):
    """The question the user has: how many cases at the rate observed so far, beside the pre-registered
    figure; two series on the same data (in whatever order their attempts finished) give the same plan."""
    texts = [(n, "wrong" if i % 5 == 0 else "fine") for i, (n, _) in enumerate(projects.cases(60))]
    root = projects.make(pytester, texts, above=0.4, margin=0.02)
    plans = []
    for _ in range(2):
        pytester.runpytest("proj", "-p", "no:cacheprovider", "--aqven-concurrency", "4", *xdist)
        capsys.readouterr()
        assert main(["plan", "rate_ok", "--project", str(root)]) == 0
        plans.append(capsys.readouterr().out.splitlines())
    assert plans[0] == plans[1], plans
    pre, observed = plans[0][1], plans[0][-1]
    assert "when the truth is one margin past the edge" in pre
    assert observed.startswith("  at the rates observed so far (label 0.") and ", the edge 0.42), about " in observed
    assert observed.endswith(" cases give an 80% chance to confirm (simulated)")
    assert int(observed.split(", about ")[1].split()[0]) < int(pre.split("about ")[1].split()[0])


def test_a_verdicts_next_step_quotes_the_rate_its_own_series_observed(pytester):
    """A series of more than 200 attempts a variant: its verdict block's figure at the observed rates is read
    from every attempt of that series (it read the first 200 by case name: another rate than the sentence's)."""
    import re

    cases = projects.cases(46) + [(f"z_wrong_{i:02d}", "wrong") for i in range(16)]    # last by name
    projects.make(pytester, cases, experiments={"rate_ok": {"above": 0.5, "margin": 0.05, "repeats": 8}})
    result = pytester.runpytest("proj", "-p", "no:cacheprovider")
    out = result.stdout.str()
    (stated,) = re.findall(r"rate_ok \(dev, (\d+)/\d+ attempts\): signal - .*: bot: label is (\d\.\d+)", out)
    assert int(stated[0]) > 200
    (observed,) = re.findall(r"at the rates observed so far \(label (\d\.\d+) over (\d+) cases", out)
    assert observed[0] == stated[1] and int(observed[1]) * 8 == int(stated[0]), (observed, stated)
