import importlib
import pkgutil

import pytest_aqven

pytest_plugins = ["pytester"]

# pytester's in-process runs drop every module they imported when they end, and numpy (scipy's too) cannot
# be imported twice in one process; the plugin imports its heavy parts lazily (docs/performance.md), so the
# test process imports every module of the package, and scipy.special, once, for every in-process run to share.
for _module in pkgutil.walk_packages(pytest_aqven.__path__, "pytest_aqven."):
    importlib.import_module(_module.name)
importlib.import_module("scipy.special")
