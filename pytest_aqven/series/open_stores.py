"""The project stores this process has open (series/db.py registers each one): the plugin commits their deferred
writes when its run loop ends, and a run that opened none never imports the database layer."""
from __future__ import annotations

import weakref
from typing import Protocol


class Flushable(Protocol):
    def flush(self) -> None: ...


_OPEN: weakref.WeakSet[Flushable] = weakref.WeakSet()


def register(store: Flushable) -> None:
    _OPEN.add(store)


def forget(store: Flushable) -> None:
    _OPEN.discard(store)


def any_open() -> bool:
    return len(_OPEN) > 0


def flush_all() -> None:
    """Commit every open store's deferred writes (before a read, at the end of a run loop, and at exit)."""
    for store in list(_OPEN):
        store.flush()
