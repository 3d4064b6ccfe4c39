import pytest

from .showcase import Showcase


@pytest.fixture
def showcase(tmp_path) -> Showcase:
    """A fresh, valid showcase-shaped project (package lumen) to break one thing at a time."""
    return Showcase(tmp_path / "lumen")
