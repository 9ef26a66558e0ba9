"""Shared fixtures: where the shared data lives."""

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = SHARED / "data"
    if not path.is_dir():
        pytest.fail(f"../shared/data not found at {path}: the fixtures live beside the checkout")
    return path
