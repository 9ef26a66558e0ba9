"""Shared fixtures: the real logs, MSCCL files and SimGrid table under tests/data."""

from pathlib import Path

import pytest

TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The fixture folder (tests/data; sources and licences in its README)."""
    return TEST_DATA
