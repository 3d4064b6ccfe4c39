"""pytest_aqven.plugin.internals: each pytest / xdist internal is found in the installed versions (CI runs this file
against the oldest and newest pytest and xdist, .ci/matrix), and an internal that changed fails loudly."""
from __future__ import annotations

import types

import pytest

from pytest_aqven.plugin import internals
from pytest_aqven.plugin.internals import InternalsChanged

from ..conftest import XDIST

CONFTEST = """
import pytest
from pytest_aqven.plugin import internals

def pytest_collection_modifyitems(config, items):
    lf = internals.last_failed(config)
    sw = internals.stepwise_info(config)
    print("AQVEN lf", type(lf).__name__, "sw", type(sw).__name__, "keys", sorted(map(str, lf or [])))

@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    with open("nodes.txt", "a") as f:
        f.write(internals.node_name(node) + "\\n")

@pytest.fixture(autouse=True)
def probe(request):
    config = request.config
    worker = internals.worker_interactor(config)
    queued = internals.queued_indices(worker) if worker is not None else None
    KeywordMatcher, Expression = internals.mark_expressions()
    matched = Expression.compile("trivial and not other").evaluate(KeywordMatcher.from_item(request.node))
    with open(f"probe-{internals.run_uid(config) is not None}.txt", "a") as f:
        f.write(f"{internals.dist_mode(config)} {type(queued).__name__} {matched} "
                f"{type(internals.junit_xml(config)).__name__}\\n")
"""


@pytest.mark.slow
def test_every_internal_is_found_in_the_installed_pytest_and_xdist(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_plain="def test_trivial():\n    pass\n\ndef test_fails():\n    assert False\n")
    pytester.runpytest("-p", "no:randomly", "--junitxml=out.xml").assert_outcomes(passed=1, failed=1)
    assert (pytester.path / "probe-False.txt").read_text().split("\n")[0] == "no NoneType True LogXML"
    result = pytester.runpytest("-p", "no:randomly", "--lf", "-s")
    result.stdout.fnmatch_lines(["AQVEN lf dict sw NoneType keys ['test_plain.py::test_fails']"])
    result = pytester.runpytest("-p", "no:randomly", "--sw", "-s")
    result.stdout.fnmatch_lines(["AQVEN lf NoneType sw StepwiseCacheInfo keys []"])
    pytester.runpytest("-p", "no:randomly", *XDIST["n2"], "--dist", "loadfile").assert_outcomes(passed=1, failed=1)
    lines = (pytester.path / "probe-True.txt").read_text().split()
    assert lines[:2] == ["loadfile", "list"] and lines[2] in ("True", "False")
    assert sorted((pytester.path / "nodes.txt").read_text().split()) == ["gw0", "gw1"]


def _config(plugins=(), named=None, workerinput=None, **options):
    """A stand-in of pytest.Config holding only what the internals read."""
    manager = types.SimpleNamespace(get_plugins=lambda: list(plugins), getplugin=(named or {}).get)
    config = types.SimpleNamespace(pluginmanager=manager, getoption=lambda name, default=None: options.get(name, default),
                                   option=types.SimpleNamespace(**options), stash={})
    if workerinput is not None:
        config.workerinput = workerinput
    return config


def test_a_worker_node_without_its_gateway_s_name_fails_loudly():
    with pytest.raises(InternalsChanged, match="xdist's WorkerController.gateway.id"):
        internals.node_name(types.SimpleNamespace(gateway=None))


def test_a_worker_without_xdist_s_worker_queue_fails_loudly():
    class WorkerInteractor:       # xdist renamed or dropped what the look-ahead reads
        pass
    with pytest.raises(InternalsChanged, match="WorkerInteractor plugin with its `torun` queue"):
        internals.worker_interactor(_config(plugins=[WorkerInteractor()], workerinput={}))
    with pytest.raises(InternalsChanged, match="WorkerInteractor"):
        internals.worker_interactor(_config(plugins=[object()], workerinput={}))
    assert internals.worker_interactor(_config()) is None       # no worker: nothing to find


def test_a_worker_queue_that_cannot_be_locked_fails_loudly():
    worker = types.SimpleNamespace(torun=[], nextitem_index=0)     # neither xdist 3.6's lock() nor a queue.Queue
    with pytest.raises(InternalsChanged, match=r"torun queue \(AttributeError"):
        internals.queued_indices(worker)


def test_the_worker_queue_of_xdist_3_5_is_a_plain_queue():
    import queue
    torun = queue.Queue()
    for index in (4, 5):
        torun.put(index)
    assert internals.queued_indices(types.SimpleNamespace(torun=torun, nextitem_index=3)) == [3, 4, 5]


def test_a_worker_input_without_the_run_uid_fails_loudly():
    with pytest.raises(InternalsChanged, match="testrunuid"):
        internals.run_uid(_config(workerinput={}))
    assert internals.run_uid(_config(workerinput={"testrunuid": "abc"})) == "abc"
    assert internals.run_uid(_config()) is None


def test_a_worker_without_xdist_s_worker_output_fails_loudly():
    with pytest.raises(InternalsChanged, match="workeroutput"):
        internals.worker_output(_config(workerinput={}))
    config = _config(workerinput={})
    config.workeroutput = {}
    assert internals.worker_output(config) is config.workeroutput


def test_the_cache_plugins_without_their_fields_fail_loudly():
    lf = types.SimpleNamespace(lastfailed=["not a dict"])
    with pytest.raises(InternalsChanged, match="LFPlugin.lastfailed"):
        internals.last_failed(_config(named={"lfplugin": lf}, lf=True))
    assert internals.last_failed(_config(named={"lfplugin": lf}, lf=False, failedfirst=False)) is None
    sw = types.SimpleNamespace(lastfailed="old name")        # no cached_info.last_failed
    with pytest.raises(InternalsChanged, match="cached_info.last_failed"):
        internals.stepwise_info(_config(named={"stepwiseplugin": sw}))


def test_the_runner_and_option_internals_fail_loudly():
    item = types.SimpleNamespace(session=types.SimpleNamespace())
    with pytest.raises(InternalsChanged, match="_setupstate.teardown_exact"):
        internals.teardown_exact(item, None)
    session = types.SimpleNamespace(config=_config())
    with pytest.raises(InternalsChanged, match="continue_on_collection_errors"):
        with internals.continuing_on_collection_errors(session, True):
            pass
    session = types.SimpleNamespace(config=_config(continue_on_collection_errors=False))
    with internals.continuing_on_collection_errors(session, True):
        assert session.config.option.continue_on_collection_errors is True
    assert session.config.option.continue_on_collection_errors is False


def test_private_modules_that_moved_fail_loudly(monkeypatch):
    import _pytest.mark

    monkeypatch.delattr(_pytest.mark, "KeywordMatcher")
    with pytest.raises(InternalsChanged, match="KeywordMatcher"):
        internals.mark_expressions()
    import _pytest.junitxml

    config = _config()
    config.stash = {_pytest.junitxml.xml_key: object()}       # a LogXML without the methods used
    with pytest.raises(InternalsChanged, match="LogXML.node_reporter"):
        internals.junit_xml(config)
    monkeypatch.delattr(_pytest.junitxml, "xml_key")
    with pytest.raises(InternalsChanged, match="xml_key"):
        internals.junit_xml(_config())


def test_the_message_names_the_installed_versions():
    message = str(InternalsChanged("pytest's X"))
    assert f"pytest {pytest.__version__} / pytest-xdist " in message and "pyproject.toml" in message
