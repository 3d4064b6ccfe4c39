import pytest

from .openai_server import Server


@pytest.fixture
def server():
    """A chat-completions server on 127.0.0.1, stopped after the test."""
    srv = Server().start()
    try:
        yield srv
    finally:
        srv.stop()
