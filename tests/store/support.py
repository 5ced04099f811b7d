"""Helpers for the store tests: real LMDB environments in temp dirs, test batches."""

from __future__ import annotations

import os
import shutil
import tempfile
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.persistence import StoredEvent

from costart.store import LmdbStore, StoreSettings, open_store

SLOW = os.environ.get("COSTART_PROFILE") == "slow"


def temp_dir(prefix: str = "costart-store-") -> str:
    return tempfile.mkdtemp(prefix=prefix)


class TempStores:
    """Opens stores in fresh temp dirs and releases/deletes them at teardown."""

    def __init__(self) -> None:
        self._stores: list[LmdbStore] = []
        self._dirs: list[str] = []

    def path(self) -> str:
        path = temp_dir()
        self._dirs.append(path)
        return path

    def open(
        self, path: str | None = None, *, map_size: int = 1 << 26, durability: str = "sync"
    ) -> LmdbStore:
        settings = StoreSettings(
            path=path or self.path(),
            map_size=map_size,
            durability="async" if durability == "async" else "sync",
        )
        store = open_store(settings)
        self._stores.append(store)
        return store

    def cleanup(self) -> None:
        for store in self._stores:
            if not store.closed:
                store.release()
        self._stores.clear()
        for path in self._dirs:
            shutil.rmtree(path, ignore_errors=True)


def batch(tag: str, size: int, *, first_version: int = 1) -> list[StoredEvent]:
    """``size`` events of one deterministic originator; state is ``tag/version/size``."""
    originator = batch_originator(tag)
    return [
        StoredEvent(
            originator_id=originator,
            originator_version=first_version + i,
            topic="costart.test:Event",
            state=f"{tag}/{first_version + i}/{size}".encode(),
        )
        for i in range(size)
    ]


def batch_originator(tag: str) -> UUID:
    return uuid5(NAMESPACE_URL, f"costart-test:{tag}")
