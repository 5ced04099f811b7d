"""Leadership of a log on PostgreSQL: the lease row, changed in short transactions.

Mirrors the LMDB lease (ADR 0009), with the database's clock instead of the host's:

* **acquire**: if the lease is free or expired, epoch += 1 and it is ours;
* **renew**: only while we are still the holder *with the same epoch*;
* **release**: expire it now (a graceful stop hands over at once).

Time only decides when a standby may *take* the lease. Safety does not depend on it:
every append of a fenced recorder checks its epoch against this row inside its own
transaction (`recorder`), so a deposed leader -- paused, partitioned, or unaware -- can
never write after a new epoch began.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime
from typing import Final

import msgspec
from eventsourcing.postgres import PostgresDatastore
from psycopg.sql import SQL, Identifier

from costart.pgstore.create import create_retrying
from costart.pgstore.schema import LEASE_TABLE, create_lease_table

DEFAULT_LEASE_MS: Final = 2000
"""How long a lease lasts unless renewed; the holder renews every third of it."""


class LeaseRecord(msgspec.Struct, frozen=True):
    """The stored lease; ``expired`` is judged by the server's clock when read."""

    holder: str
    epoch: int
    expires: datetime
    expired: bool


def new_holder_id() -> str:
    """A holder id unique to this process: host, pid, and a random part (pids recycle)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


class PgLease:
    """One process's handle on the lease of one log (``name``, the events table).

    Not thread-safe: one thread (the keeper or the standby loop) acquires and renews.
    """

    def __init__(
        self,
        datastore: PostgresDatastore,
        name: str,
        holder: str | None = None,
        duration_ms: int = DEFAULT_LEASE_MS,
    ) -> None:
        if duration_ms <= 0:
            raise ValueError("the lease duration must be positive")
        self.datastore = datastore
        self.name = name
        self.holder = holder or new_holder_id()
        self.duration_ms = duration_ms
        self.epoch: int | None = None
        """The epoch we hold (None: not holding)."""
        table = Identifier(datastore.schema, LEASE_TABLE)
        until = SQL("clock_timestamp() + make_interval(secs => %(ms)s / 1000.0)")
        self._read = SQL(
            "SELECT holder, epoch, expires, expires <= clock_timestamp() AS expired "
            "FROM {t} WHERE name = %(name)s"
        ).format(t=table)
        # One statement each: the row lock of the UPDATE orders it with every fenced
        # append (which holds a share lock on the row until it commits).
        self._acquire = SQL(
            "INSERT INTO {t} AS l (name, holder, epoch, expires) "
            "VALUES (%(name)s, %(holder)s, 1, {until}) "
            "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
            "epoch = l.epoch + 1, expires = excluded.expires "
            "WHERE l.expires <= clock_timestamp() "
            "RETURNING epoch"
        ).format(t=table, until=until)
        self._renew = SQL(
            "UPDATE {t} SET expires = {until} "
            "WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s "
            "RETURNING epoch"
        ).format(t=table, until=until)
        self._release = SQL(
            "UPDATE {t} SET expires = clock_timestamp() "
            "WHERE name = %(name)s AND holder = %(holder)s AND epoch = %(epoch)s"
        ).format(t=table)
        self._create = create_lease_table(datastore.schema)

    @property
    def renew_interval_s(self) -> float:
        return self.duration_ms / 3 / 1000

    def _params(self) -> dict[str, object]:
        return {
            "name": self.name,
            "holder": self.holder,
            "ms": self.duration_ms,
            "epoch": self.epoch,
        }

    def ensure_table(self) -> None:
        def create() -> None:
            with self.datastore.transaction(commit=True) as curs:
                curs.execute(self._create)

        create_retrying(create)

    def read(self) -> LeaseRecord | None:
        with self.datastore.transaction(commit=False) as curs:
            row = curs.execute(self._read, self._params()).fetchone()
        return None if row is None else msgspec.convert(row, LeaseRecord)

    def is_free(self, record: LeaseRecord | None) -> bool:
        """Whether a standby may take the lease now (free, or expired by the server's clock)."""
        return record is None or record.expired

    def try_acquire(self) -> int | None:
        """Take the lease if it is free or expired: the new epoch, or None if it is held."""
        with self.datastore.transaction(commit=True) as curs:
            row = curs.execute(self._acquire, self._params()).fetchone()
        self.epoch = None if row is None else int(row["epoch"])
        return self.epoch

    def renew(self) -> bool:
        """Extend our lease; False (and we hold nothing) if another epoch began. A lease
        that expired without anyone taking it is still ours: nobody else wrote."""
        if self.epoch is None:
            return False
        with self.datastore.transaction(commit=True) as curs:
            row = curs.execute(self._renew, self._params()).fetchone()
        if row is None:
            self.epoch = None
            return False
        return True

    def release(self) -> None:
        """Expire our lease now so a standby takes over without waiting it out."""
        if self.epoch is None:
            return
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(self._release, self._params())
        self.epoch = None
