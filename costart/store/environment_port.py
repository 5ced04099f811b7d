"""What the parts an LMDB store owns -- its headroom, its lease, its group committer --
need of the store that owns them (`costart.store.lmdbenv.LmdbStore` keeps it).

The parts are typed by this port rather than by the store class, so the store may build
them without the modules importing each other in a circle.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

import lmdb

from costart.store.settings import StoreSettings


class EnvironmentPort(Protocol):
    """An open LMDB environment whose transactions are counted by the resize gate:
    every `begin` is balanced by one `leave`."""

    settings: StoreSettings
    env: lmdb.Environment

    @property
    def page_size(self) -> int: ...

    def begin(self, *, write: bool = False) -> lmdb.Transaction[bytes]:
        """A transaction counted by the gate; end it, then call `leave`."""
        ...

    def leave(self) -> None: ...

    def read(self) -> AbstractContextManager[lmdb.Transaction[bytes]]:
        """A counted read transaction, ended and left on exit."""
        ...

    def grow(self) -> None:
        """Enlarge the map (after a write met a full map); no transaction may be open."""
        ...

    def db(self, name: bytes, *, create: bool = True) -> lmdb._Database: ...

    def maybe_sync(self) -> None: ...

    def notify(self, log_names: set[str]) -> None:
        """Wake this process's subscriptions to the named logs."""
        ...
