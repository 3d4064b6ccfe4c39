"""The names of AQVEN's Python API (`aqven.policies`, `aqven.spec`, `aqven.runtime`) for user code, when
the `aqven` engine package is not installed (it needs Python 3.14). When it is installed, it wins: the
finder below sits last on sys.meta_path and only answers for `aqven` when no other finder does."""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Sequence

PREFIX = "aqven"
TARGET = __name__ + ".aqven"


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        ours = TARGET + fullname[len(PREFIX):]
        spec = importlib.util.find_spec(ours)
        if spec is None:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(ours), is_package=spec.submodule_search_locations
                                               is not None)


class _Alias(importlib.abc.Loader):
    """`aqven.x` is a module of its own whose names are those of `pytest_aqven.compat.aqven.x`: the same
    objects, so `aqven.policies.Verdict is pytest_aqven.engine.evaluators.Verdict`."""

    def __init__(self, target: str) -> None:
        self.target = target

    def exec_module(self, module: types.ModuleType) -> None:
        source = importlib.import_module(self.target)
        names = {k: v for k, v in vars(source).items() if not k.startswith("__") or k == "__all__"}
        package = hasattr(source, "__path__")
        for name in getattr(source, "__all__", ()):     # a submodule named like a name (aqven.spec.flow): loaded
            if package and isinstance(names.get(name), types.FunctionType) and \
                    importlib.util.find_spec(f"{self.target}.{name}") is not None:   # first, the name stays the function
                importlib.import_module(f"{module.__name__}.{name}")
        module.__dict__.update(names)
        module.__doc__ = source.__doc__
        module.__dict__["__pytest_aqven_compat__"] = True


def install() -> None:
    """Make `import aqven...` work for user code; a no-op when already installed."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())


def provided() -> bool:
    """True when `aqven` resolves to this compatibility module rather than the engine package."""
    module = sys.modules.get(PREFIX)
    return module is not None and getattr(module, "__pytest_aqven_compat__", False)
