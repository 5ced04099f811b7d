"""The backends that keep a log at rest (LMDB and PostgreSQL) as one parametrized
``store`` fixture, for the tests about stored logs that run on each of them: the host
term's fence, and the damage suite (`tests/damage`). The store contract itself is a test
case every backend subclasses (`tests/contract/store_contract.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .stores import Store, lmdb_store, pg_store


@pytest.fixture(params=["lmdb", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "lmdb":
        with lmdb_store(tmp_path) as opened:
            yield opened
        return
    with pg_store(request.getfixturevalue("pg_url")) as opened:
        yield opened
