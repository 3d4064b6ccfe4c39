import pytest

from .openai_server import Server


@pytest.fixture(autouse=True)
def fresh_providers():
    """Each test builds its providers as a new process would."""
    from pytest_aqven.providers import registry
    registry.forget()


@pytest.fixture
def server():
    """A chat-completions server on 127.0.0.1, stopped after the test."""
    srv = Server().start()
    try:
        yield srv
    finally:
        srv.stop()
