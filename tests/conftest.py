import pytest

# The two ways a user runs a project where the plugin aggregates across processes (verdicts, findings, exit
# code): in one process, and on two xdist workers. The arguments go on the command line of the run.
XDIST = {"no-xdist": (), "n2": ("-n", "2")}


@pytest.fixture(params=XDIST.values(), ids=XDIST.keys())
def xdist(request) -> tuple[str, ...]:
    """A test that takes it runs twice: once without xdist, once with `-n 2`."""
    return request.param
