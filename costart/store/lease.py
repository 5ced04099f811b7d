"""Leadership of one LMDB environment: a lease with an epoch, stored in the environment.

The lease is one record in the named database ``lease``: who holds it, its epoch, and
when it expires as wall-clock nanoseconds (processes share no monotonic clock; on one
host they share the wall clock). Every change is one LMDB write transaction, so it is
ordered with every append by LMDB's single-writer lock, across processes:

* **acquire**: if the lease is free or expired, epoch += 1 and it is ours;
* **renew**: only while we are still the holder *with the same epoch*;
* **release**: expire it now (a graceful stop hands over at once).

Time only decides when a standby may *take* the lease. Safety does not depend on it:
every append carries its writer's epoch and is refused inside its write transaction when
the stored epoch differs (fencing, `committer`), so a deposed leader -- paused, with a
jumping clock, or unaware -- can never write after a new epoch began.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import lmdb
import msgspec

if TYPE_CHECKING:
    from costart.store.environment_port import EnvironmentPort

LEASE_DB: Final = b"lease"
LEASE_KEY: Final = b"leader"
TERM_KEY: Final = b"host-term"
DEFAULT_LEASE_NS: Final = 2 * 10**9
"""How long a lease lasts unless renewed; the holder renews every third of it."""

WallClock = Callable[[], int]


class LeaseRecord(msgspec.Struct, frozen=True, array_like=True):
    """The stored lease. ``epoch`` only ever grows; 0 means never held."""

    holder: str
    epoch: int
    expires_ns: int


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(LeaseRecord).decode


def read_record(txn: lmdb.Transaction[bytes], db: lmdb._Database) -> LeaseRecord | None:
    raw = txn.get(LEASE_KEY, db=db)
    return None if raw is None else _decode(raw)


def stored_epoch(txn: lmdb.Transaction[bytes], db: lmdb._Database) -> int:
    """The epoch appends must carry, read inside the appending write transaction."""
    record = read_record(txn, db)
    return 0 if record is None else record.epoch


def stored_term(txn: lmdb.Transaction[bytes], db: lmdb._Database) -> int:
    """The log's newest host term (ADR 0027), read inside the appending transaction;
    0 before any claim. Kept beside the lease, under its own key."""
    raw = txn.get(TERM_KEY, db=db)
    return 0 if raw is None else int.from_bytes(raw, "big")


def store_term(txn: lmdb.Transaction[bytes], db: lmdb._Database, term: int) -> None:
    txn.put(TERM_KEY, term.to_bytes(8, "big"), db=db)


def new_holder_id() -> str:
    """A holder id unique to this process: host, pid, and a random part (pids recycle)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


class Lease:
    """One process's handle on the lease of a store. Not thread-safe for writes: one
    thread (the keeper or the standby loop) acquires and renews."""

    def __init__(
        self,
        store: EnvironmentPort,
        holder: str | None = None,
        duration_ns: int = DEFAULT_LEASE_NS,
        clock: WallClock = time.time_ns,
    ) -> None:
        if duration_ns <= 0:
            raise ValueError("the lease duration must be positive")
        self.store = store
        self.holder = holder or new_holder_id()
        self.duration_ns = duration_ns
        self.clock = clock
        self.epoch: int | None = None
        """The epoch we hold (None: not holding)."""
        self._db = store.db(LEASE_DB)

    @property
    def renew_interval_s(self) -> float:
        return self.duration_ns / 3 / 1e9

    def read(self) -> LeaseRecord | None:
        with self.store.read() as txn:
            return read_record(txn, self._db)

    def is_free(self, record: LeaseRecord | None) -> bool:
        """Whether a standby may take the lease now (free, or expired by our clock)."""
        return record is None or record.expires_ns <= self.clock()

    def try_acquire(self) -> int | None:
        """Take the lease if it is free or expired: the new epoch, or None if it is held."""

        def take(current: LeaseRecord | None) -> LeaseRecord | None:
            if not self.is_free(current):
                return None
            epoch = 1 if current is None else current.epoch + 1
            return LeaseRecord(self.holder, epoch, self.clock() + self.duration_ns)

        taken = self._write(take)
        self.epoch = None if taken is None else taken.epoch
        return self.epoch

    def renew(self) -> bool:
        """Extend our lease; False (and we hold nothing) if another epoch began. A lease
        that expired without anyone taking it is still ours: nobody else wrote."""
        epoch = self.epoch
        if epoch is None:
            return False

        def extend(current: LeaseRecord | None) -> LeaseRecord | None:
            if current is None or current.holder != self.holder or current.epoch != epoch:
                return None
            return LeaseRecord(self.holder, epoch, self.clock() + self.duration_ns)

        if self._write(extend) is None:
            self.epoch = None
            return False
        return True

    def release(self) -> None:
        """Expire our lease now so a standby takes over without waiting it out."""
        epoch = self.epoch
        if epoch is None:
            return

        def expire(current: LeaseRecord | None) -> LeaseRecord | None:
            if current is None or current.holder != self.holder or current.epoch != epoch:
                return None
            return LeaseRecord(self.holder, epoch, 0)

        self._write(expire)
        self.epoch = None

    def _write(
        self, change: Callable[[LeaseRecord | None], LeaseRecord | None]
    ) -> LeaseRecord | None:
        """Apply ``change`` to the stored record in one write transaction (None: leave it).

        ``change`` reads the clock itself, after LMDB's writer lock is held, so time spent
        waiting for the lock never shortens the lease it writes.
        """
        store = self.store
        while True:
            txn = store.begin(write=True)
            try:
                new = change(read_record(txn, self._db))
                if new is None:
                    txn.abort()
                else:
                    txn.put(LEASE_KEY, _encode(new), db=self._db)
                    txn.commit()
            except lmdb.MapFullError:
                txn.abort()
                store.leave()
                store.grow()
                continue
            except BaseException:
                txn.abort()
                store.leave()
                raise
            store.leave()
            return new
