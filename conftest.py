pytest_plugins = ["pytester"]

# pytester's in-process runs drop every module they imported when they end, and numpy cannot be imported
# twice in one process; the plugin imports its heavy parts lazily (docs/performance.md), so the test
# process imports them once, here, for every in-process run to share.
import pytest_aqven.collect  # noqa: E402,F401
import pytest_aqven.series.conclude  # noqa: E402,F401
import pytest_aqven.series.findings  # noqa: E402,F401
