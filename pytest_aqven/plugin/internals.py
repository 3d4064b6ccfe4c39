"""Every pytest and pytest-xdist internal the plugin reads or sets, in one place.

None of these is a public API: each may change in a release of pytest or xdist. So each access checks what
it finds and raises InternalsChanged, naming the internal and the installed versions, instead of silently
doing less. CI runs tests/plugin/test_internals.py against the oldest and newest pytest and xdist pyproject.toml
declares (.ci/matrix). Imports nothing heavy: pytest imports the plugin in every run.
"""
from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from xdist.workermanage import WorkerController


class InternalsChanged(RuntimeError):
    """An internal of pytest or xdist is not what this version of pytest-aqven was built for."""

    def __init__(self, what: str) -> None:
        super().__init__(f"pytest-aqven reads {what}, which this pytest {pytest.__version__} / pytest-xdist "
                         f"{_xdist_version()} does not have as expected: install the versions pyproject.toml "
                         "declares, or report it to pytest-aqven")


def _xdist_version() -> str:
    try:
        from xdist import __version__
    except ImportError:
        return "(not installed)"
    return __version__


# xdist: a worker's own queue, and the distribution mode a worker is run under

def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def worker_output(config: pytest.Config) -> dict[str, Any]:
    """What an xdist worker sends its controller when it ends (xdist's `config.workeroutput`)."""
    output = getattr(config, "workeroutput", None)
    if output is None:
        raise InternalsChanged("xdist's config.workeroutput")
    return output


def node_output(node: Any) -> dict[str, Any]:
    """What a worker sent when it ended, read on the controller (xdist's `WorkerController.workeroutput`; absent
    when the worker crashed)."""
    return getattr(node, "workeroutput", {})


def node_name(node: Any) -> str:
    """A worker's name on the controller (xdist's `WorkerController.gateway.id`: gw0, gw1, ...)."""
    name = getattr(getattr(node, "gateway", None), "id", None)
    if not isinstance(name, str):
        raise InternalsChanged("xdist's WorkerController.gateway.id")
    return name


def dist_mode(config: pytest.Config) -> str:
    """xdist's distribution mode of this run, on a worker too (xdist sets `dist` to "no" there: the controller
    sends it in the worker's input, pytest_configure_node); "no" without xdist."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return workerinput.get("aqven_dist", "unknown")     # a controller without this plugin: assume the worst
    return config.getoption("dist", "no") or "no"


def send_dist_mode(node: WorkerController) -> None:
    """On the controller, for each worker it starts: the mode goes in the worker's input."""
    node.workerinput["aqven_dist"] = dist_mode(node.config)


def run_uid(config: pytest.Config) -> str | None:
    """xdist's testrunuid, the same on every worker of one run; None outside a worker."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    if "testrunuid" not in workerinput:
        raise InternalsChanged("xdist's workerinput['testrunuid']")
    return workerinput["testrunuid"]


def worker_interactor(config: pytest.Config):
    """On an xdist worker, xdist's WorkerInteractor (found by class name: xdist exports no handle); else None."""
    if not is_worker(config):
        return None
    found = next((p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), None)
    if found is None or not hasattr(found, "torun") or not hasattr(found, "nextitem_index"):
        raise InternalsChanged("xdist's WorkerInteractor plugin with its `torun` queue and `nextitem_index`")
    return found


def queued_indices(worker: WorkerController) -> list:
    """The indices into session.items of the item the worker runs next and of those queued after it."""
    torun = worker.torun
    try:
        if hasattr(torun, "lock"):                  # xdist 3.6+: its TestQueue
            with torun.lock() as queue:
                return [worker.nextitem_index, *queue]
        with torun.mutex:                           # xdist 3.5: a queue.Queue (its deque under its mutex)
            return [worker.nextitem_index, *torun.queue]
    except (AttributeError, TypeError) as exc:
        raise InternalsChanged(f"xdist's WorkerInteractor.torun queue ({type(exc).__name__}: {exc})") from None


# pytest's runner, cache and collection internals

def teardown_exact(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """What pytest's runner does after an item, for an item the plugin does not run."""
    setupstate = getattr(item.session, "_setupstate", None)
    if setupstate is None or not hasattr(setupstate, "teardown_exact"):
        raise InternalsChanged("pytest's Session._setupstate.teardown_exact")
    setupstate.teardown_exact(nextitem)


def last_failed(config: pytest.Config) -> dict | None:
    """The cache plugin's last failed node ids under --lf / --ff, as a dict to read and add to; else None.
    Its keys are node id strings, or NodeId objects since pytest 9.2 (whose str() is the node id)."""
    lf = config.pluginmanager.getplugin("lfplugin")
    if lf is None or not (config.getoption("lf") or config.getoption("failedfirst")):
        return None
    found = getattr(lf, "lastfailed", None)
    if not isinstance(found, dict):
        raise InternalsChanged("pytest's LFPlugin.lastfailed dict")
    return found


def item_key(item: pytest.Item) -> object:
    """The key pytest's cache plugins give this item (its NodeId object since pytest 9.2, else its node id)."""
    return getattr(item, "id", item.nodeid)


def stepwise_info(config: pytest.Config):
    """Under --sw, what the stepwise plugin keeps of the last run: its `last_failed` (a node id string, or a
    NodeId object in newer pytest) can be read and set. None without --sw."""
    sw = config.pluginmanager.getplugin("stepwiseplugin")
    if sw is None:
        return None
    info = getattr(sw, "cached_info", None)
    if not hasattr(info, "last_failed"):
        raise InternalsChanged("pytest's StepwisePlugin.cached_info.last_failed")
    return info


@contextlib.contextmanager
def continuing_on_collection_errors(session: pytest.Session, keep_going: bool) -> Iterator[None]:
    """The run loop, as with --continue-on-collection-errors when `keep_going`."""
    option = session.config.option
    if not hasattr(option, "continue_on_collection_errors"):
        raise InternalsChanged("pytest's option continue_on_collection_errors")
    keep = option.continue_on_collection_errors
    if keep_going:
        option.continue_on_collection_errors = True
    try:
        yield
    finally:
        option.continue_on_collection_errors = keep


def mark_expressions():
    """pytest's -k / -m matching: (KeywordMatcher, Expression) of `_pytest.mark`."""
    try:
        from _pytest.mark import KeywordMatcher
        from _pytest.mark.expression import Expression
    except ImportError as exc:
        raise InternalsChanged(f"_pytest.mark's KeywordMatcher and Expression ({exc})") from None
    if not (hasattr(KeywordMatcher, "from_item") and hasattr(Expression, "compile")):
        raise InternalsChanged("_pytest.mark's KeywordMatcher.from_item and Expression.compile")
    return KeywordMatcher, Expression


def junit_xml(config: pytest.Config):
    """junitxml's LogXML of this run (to name testcases and add suite properties), or None without --junitxml."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError as exc:
        raise InternalsChanged(f"_pytest.junitxml's xml_key ({exc})") from None
    xml = config.stash.get(xml_key, None)
    if xml is not None and not (hasattr(xml, "node_reporter") and hasattr(xml, "add_global_property")):
        raise InternalsChanged("_pytest.junitxml's LogXML.node_reporter and add_global_property")
    return xml


def past_capture(config: pytest.Config) -> Callable[[str], None]:
    """A line to the terminal's stderr past pytest's capture, from any thread while a test runs (a notice the
    run must show now: the store is away and the run waits): the stderr fd pytest's global capture saved
    (`--capture=fd`, the default), the interpreter's own stderr under `--capture=sys`, else plain stderr."""
    def say(text: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        err = getattr(getattr(capman, "_global_capturing", None), "err", None)
        fd = getattr(err, "targetfd_save", None)
        if isinstance(fd, int):
            os.write(fd, f"{text}\n".encode(errors="replace"))
        else:
            print(text, file=sys.__stderr__ if err is not None else sys.stderr, flush=True)
    return say
