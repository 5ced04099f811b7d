"""Stores written by earlier releases, each test on its own copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A private copy of the test module's ``FIXTURE`` store: opening a store may create
    its lock file beside it, and a test may write to it."""
    copy = tmp_path / "store"
    shutil.copytree(request.module.FIXTURE, copy)
    return copy
