"""Leading a store: its lease (in the LMDB environment or a PostgreSQL row) and the
environment of a Controller whose appends are fenced at an epoch. `costart serve` leads
through it; the direct CLI checks it so it never writes behind a running leader's back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from costart.domain.errors import Conflict
from costart.pgstore.ha import fenced_env
from costart.pgstore.ha import open_factory as open_pg_factory
from costart.pgstore.ha import open_lease as open_pg_lease
from costart.store.keeper import LeaseLike
from costart.store.lease import Lease
from costart.store.standby import open_factory

PG_MODULE = "costart.pgstore"
DEFAULT_LEASE_NS = 2 * 10**9


class Leadership:
    """What leading needs of a store: its lease, and the environment of a Controller
    whose appends are fenced at an epoch (LMDB checks it in the write transaction; the
    PostgreSQL store reads it from its environment and checks it in the append)."""

    def __init__(self, env: dict[str, str], lease_ns: int = DEFAULT_LEASE_NS) -> None:
        """Raises ValueError for a store that keeps no lease (e.g. SQLite)."""
        self.env = env
        if env.get("PERSISTENCE_MODULE") == PG_MODULE:
            factory = open_pg_factory(env)
            self.factory: Any = factory
            self.lease: LeaseLike = open_pg_lease(factory, duration_ms=max(lease_ns // 10**6, 1))
            self.fenced: Callable[[int], dict[str, str]] = lambda epoch: fenced_env(env, epoch)
            self.writer_epoch: Callable[[int], int | None] = lambda epoch: None  # fenced by env
        else:
            lmdb_factory = open_factory(env)  # ValueError: a store without leases
            self.factory = lmdb_factory
            self.lease = Lease(lmdb_factory.store, duration_ns=lease_ns)
            self.fenced = lambda epoch: env
            self.writer_epoch = lambda epoch: epoch  # checked in the write transaction

    def live_holder(self) -> str | None:
        """Who holds the lease now (a running leader), or None when it is free/expired."""
        record = self.lease.read()
        if record is None or self.lease.is_free(record):
            return None
        return f"{record.holder} (epoch {record.epoch})"


def refuse_if_led(env: dict[str, str]) -> None:
    """Raise `Conflict` when a running leader holds the store's lease: a second writer
    would append behind its back (and stop it). Stores without leases pass."""
    try:
        leadership = Leadership(env)
    except ValueError:
        return
    holder = leadership.live_holder()
    if holder is not None:
        raise Conflict(
            f"the store is led by a running `costart serve` ({holder}): "
            "write through it with --server URL"
        )
