"""Fixtures for the store tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .support import TempStores


@pytest.fixture
def stores() -> Iterator[TempStores]:
    ts = TempStores()
    yield ts
    ts.cleanup()
