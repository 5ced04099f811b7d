"""The store contract (`tests/contract/store_contract.py`) on every backend: memory,
LMDB and PostgreSQL."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from .store_contract import StoreContract
from .stores import Store, lmdb_store, memory_store, pg_store


class TestStoreContractInMemory(StoreContract):
    def create_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> AbstractContextManager[Store]:
        return memory_store()


class TestStoreContractOnLmdb(StoreContract):
    def create_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> AbstractContextManager[Store]:
        return lmdb_store(tmp_path)


class TestStoreContractOnPostgresql(StoreContract):
    def create_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> AbstractContextManager[Store]:
        return pg_store(request.getfixturevalue("pg_url"))
