"""One shared, ref-counted ``lmdb.Environment`` per directory in a process.

LMDB forbids opening the same environment twice in one process (its fcntl
locks belong to the process/file pair, so a second open would share and then
drop the first one's locks). Every recorder, factory and reader in a process
therefore goes through ``open_store``, which hands out the one ``LmdbStore`` for
a directory's real path and closes it when the last holder releases it.

The store also owns what must be per-environment rather than per-recorder:
named-database handles, the group committer (one writer per environment), the
in-process notification of subscriptions, and the map-resize gate.

Resize gate: ``mdb_env_set_mapsize`` may only run while no transaction is open
in the process. Every transaction this package opens is counted by the gate,
and a resize waits for the count to reach zero while holding new ones back.
No transaction is ever held while user code runs (iterators read in chunks),
so a resize cannot wait on a thread that is waiting on it.
"""

from __future__ import annotations

import os
import threading
from time import monotonic
from types import TracebackType
from typing import Final

import lmdb
from eventsourcing.persistence import OperationalError

from costart.lmdbkit.datafile import (
    check_data_file,
    check_not_lost,
    forget_new_environment,
    free_bytes,
    is_space_error,
    reserve_lock_file,
)
from costart.lmdbkit.errors import StoreFullError
from costart.logging_setup import library_logger
from costart.store.committer import GroupCommitter
from costart.store.headroom import Headroom
from costart.store.record_layout import LogHandles
from costart.store.settings import ASYNC_SYNC_INTERVAL, StoreSettings

log = library_logger(__name__)

MAX_DBS: Final = 256
MAX_READERS: Final = 1024
MAX_MAP_SIZE: Final = 1 << 44


def log_db_name(log: str) -> bytes:
    """Name of the records database of a log (listed by readers and verifiers)."""
    return b"log:" + log.encode()


def index_db_name(log: str) -> bytes:
    return b"idx:" + log.encode()


def tracking_db_name(name: str) -> bytes:
    return b"trk:" + name.encode()


class _ReadTxn:
    """Context manager for a counted read transaction (cheaper than contextlib)."""

    __slots__ = ("_store", "_txn")

    def __init__(self, store: LmdbStore) -> None:
        self._store = store

    def __enter__(self) -> lmdb.Transaction[bytes]:
        self._txn = self._store.begin()
        return self._txn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._txn.abort()
        finally:
            self._store.leave()


class LmdbStore:
    """A process-wide open LMDB environment. Obtain with ``open_store``."""

    def __init__(self, settings: StoreSettings, key: str) -> None:
        self.settings = settings
        self.key = key
        # Before mapping: a short file would SIGBUS, an empty or missing one would be
        # taken for a new store, a damaged meta page would silently roll back.
        check_not_lost(settings.path)
        new = check_data_file(settings.path) is None
        try:
            if settings.readonly:
                # lock=False: no lock file, no reader table -- only safe when no
                # process writes to these files, i.e. for a copy of a log.
                self.env = lmdb.open(
                    settings.path, readonly=True, lock=False, create=False, max_dbs=MAX_DBS
                )
            else:
                os.makedirs(settings.path, exist_ok=True)
                reserve_lock_file(settings.path, MAX_READERS)
                self.env = lmdb.open(
                    settings.path,
                    map_size=settings.map_size,
                    max_dbs=MAX_DBS,
                    max_readers=MAX_READERS,
                    # sync: LMDB flushes data, then meta, before commit returns.
                    sync=settings.durability == "sync",
                    metasync=settings.durability == "sync",
                    max_spare_txns=16,
                )
        except (lmdb.Error, StoreFullError) as e:
            if new and not settings.readonly:
                forget_new_environment(settings.path)  # not mistaken later for a lost store
            if isinstance(e, StoreFullError):
                raise
            if is_space_error(e):
                free = free_bytes(settings.path)
                raise StoreFullError(settings.path, 2 * 4096, free, str(e)) from None
            raise OperationalError(f"cannot open LMDB environment: {e}") from e
        if not settings.readonly:
            # Readers of a process that died (SIGKILL) keep their slots and pin
            # old pages until cleared; clear them before reading and writing.
            stale = self.env.reader_check()
            if stale:
                log.info("lmdb.stale_readers_cleared", count=stale)
        self._refs = 0
        self._gate = threading.Condition()
        self._txns = 0
        self._resizing = False
        self._dbs: dict[bytes, lmdb._Database] = {}
        self._dbs_lock = threading.Lock()
        self._listeners: dict[str, set[threading.Event]] = {}
        self._listeners_lock = threading.Lock()
        self._last_sync = monotonic()
        self.closed = False
        # Only commits that flush one by one (sync) gain from never growing the file.
        fills = settings.durability == "sync" and not settings.readonly
        self.headroom = Headroom(self, settings.headroom if fills else 0)
        self.committer = GroupCommitter(self)

    # -- reference counting -------------------------------------------------------------

    def retain(self) -> None:
        """Add a holder; balance with ``release``."""
        with _registry_lock:
            if self.closed:
                raise OperationalError("LMDB store is closed")
            self._refs += 1

    def release(self) -> None:
        """Drop a holder; the last one closes the environment."""
        with _registry_lock:
            self._refs -= 1
            if self._refs > 0 or self.closed:
                return
            if _registry.get(self.key) is self:
                del _registry[self.key]
            self.closed = True
        self._close()

    def _close(self) -> None:
        try:
            if self.settings.durability == "async" and not self.settings.readonly:
                self.env.sync(True)
        finally:
            self.env.close()

    # -- transactions and the resize gate ------------------------------------------------

    def enter(self) -> None:
        """Count a transaction about to be opened (waits while a resize runs)."""
        with self._gate:
            while self._resizing:
                self._gate.wait()
            self._txns += 1

    def leave(self) -> None:
        """Uncount a transaction that has been committed or aborted."""
        with self._gate:
            self._txns -= 1
            if self._resizing and not self._txns:
                self._gate.notify_all()

    def begin(self, *, write: bool = False) -> lmdb.Transaction[bytes]:
        """Enter the gate and begin a transaction; the caller must ``leave()``."""
        while True:
            self.enter()
            try:
                return self.env.begin(write=write)
            except lmdb.MapResizedError:
                # Another process grew the map past ours: adopt its size.
                self.leave()
                self.resize(0)
            except BaseException:
                self.leave()
                raise

    def read(self) -> _ReadTxn:
        """``with store.read() as txn:`` a counted read-only transaction."""
        return _ReadTxn(self)

    def resize(self, new_size: int) -> None:
        """Set the map size (0 adopts the size on disk) with no transaction open."""
        with self._gate:
            while self._resizing:
                self._gate.wait()
            self._resizing = True
            while self._txns:
                self._gate.wait()
        try:
            old = self.env.info()["map_size"]
            if new_size == 0 or new_size > old:
                self.env.set_mapsize(new_size)
                log.info("lmdb.map_resized", old=old, new=self.env.info()["map_size"])
        finally:
            with self._gate:
                self._resizing = False
                self._gate.notify_all()

    def grow(self) -> None:
        """Double the map size (called after a write failed with MapFullError)."""
        # Pages pinned by readers of dead processes are a common cause of a
        # full map; free them first (the grown map then has more room too).
        self.env.reader_check()
        size = self.env.info()["map_size"]
        if size >= MAX_MAP_SIZE:
            raise StoreFullError(
                self.settings.path, size, None, f"the map may not grow past {MAX_MAP_SIZE} bytes"
            )
        self.resize(min(size * 2, MAX_MAP_SIZE))

    @property
    def page_size(self) -> int:
        return int(self.env.stat()["psize"])

    def maybe_sync(self) -> None:
        """In async mode, flush to disk if the last flush is old enough."""
        if self.settings.durability == "async":
            now = monotonic()
            if now - self._last_sync >= ASYNC_SYNC_INTERVAL:
                self._last_sync = now
                self.env.sync(True)

    def sync(self) -> None:
        """Flush everything committed so far to disk."""
        if not self.settings.readonly:
            self.env.sync(True)

    # -- named databases -----------------------------------------------------------------

    def db(self, name: bytes, *, create: bool = True) -> lmdb._Database:
        """Handle of a named database, opened once per environment."""
        with self._dbs_lock:
            handle = self._dbs.get(name)
            while handle is None:
                self.enter()
                try:
                    handle = self.env.open_db(name, create=create)
                except lmdb.MapResizedError:
                    grow = False  # another process grew the map: adopt its size
                except lmdb.MapFullError:
                    grow = True  # creating the database needs a page
                except lmdb.NotFoundError:
                    msg = f"LMDB database {name.decode()!r} does not exist (CREATE_TABLE is off)"
                    raise OperationalError(msg) from None
                except lmdb.Error as e:
                    raise OperationalError(f"cannot open LMDB database {name!r}: {e}") from e
                finally:
                    self.leave()
                if handle is None:
                    if grow:
                        self.grow()
                    else:
                        self.resize(0)
            self._dbs[name] = handle
            return handle

    def log_handles(self, log_name: str, *, create: bool = True) -> LogHandles:
        return LogHandles(
            log_name,
            self.db(log_db_name(log_name), create=create),
            self.db(index_db_name(log_name), create=create),
        )

    # -- in-process notification ---------------------------------------------------------

    def listen(self, log_name: str, event: threading.Event) -> None:
        with self._listeners_lock:
            self._listeners.setdefault(log_name, set()).add(event)

    def unlisten(self, log_name: str, event: threading.Event) -> None:
        with self._listeners_lock:
            self._listeners.get(log_name, set()).discard(event)

    def notify(self, log_names: set[str]) -> None:
        """Wake subscriptions of logs that just had records committed."""
        with self._listeners_lock:
            events = [e for name in log_names for e in self._listeners.get(name, ())]
        for event in events:
            event.set()


_registry: dict[str, LmdbStore] = {}
# Re-entrant: a recorder's finalizer (weakref.finalize -> release) may run from the
# garbage collector while this thread already holds the lock inside open_store.
_registry_lock = threading.RLock()
_registry_pid = os.getpid()


def open_store(settings: StoreSettings) -> LmdbStore:
    """Return the process's store for ``settings.path``, retained once for the caller.

    A read-only open of a directory that is already open for writing in this
    process shares the writable store (LMDB allows one open per process).

    The first opener's settings win; a later opener asking for different ones
    gets the open store and a warning in the log.
    """
    global _registry_pid  # noqa: PLW0603 (process-wide registry by design)
    if not settings.readonly:
        os.makedirs(settings.path, exist_ok=True)
    key = os.path.realpath(settings.path)
    with _registry_lock:
        if os.getpid() != _registry_pid:
            # A forked child must not touch its parent's environments.
            _registry.clear()
            _registry_pid = os.getpid()
        store = _registry.get(key)
        if store is None:
            store = LmdbStore(settings, key)
            _registry[key] = store
        elif store.settings.readonly and not settings.readonly:
            msg = f"LMDB environment {key!r} is open read-only in this process"
            raise OperationalError(msg)
        elif store.settings.durability != settings.durability:
            log.warning(
                "lmdb.settings_mismatch",
                path=key,
                open_with=store.settings.durability,
                requested=settings.durability,
            )
        store._refs += 1
        return store
