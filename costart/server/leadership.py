"""Leading a store: its lease (in the LMDB environment or a PostgreSQL row) and the
environment of a Controller whose appends are fenced at an epoch. `costart serve` leads
through it; the direct CLI checks it so it never writes behind a running leader's back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from costart.domain.errors import Conflict
from costart.eventlog.backends import backend_for
from costart.eventlog.lease_keeper import LeaseLike

DEFAULT_LEASE_NS = 2 * 10**9


class Leadership:
    """What leading needs of a store: its lease, and the environment of a Controller
    whose appends are fenced at an epoch (LMDB checks it in the write transaction; the
    PostgreSQL store reads it from its environment and checks it in the append)."""

    def __init__(self, env: dict[str, str], lease_ns: int = DEFAULT_LEASE_NS) -> None:
        """Raises ValueError for a store that keeps no lease (e.g. SQLite)."""
        self.env = env
        lead = backend_for(env).lead(env, lease_ns)  # the backend PERSISTENCE_MODULE names
        self.factory: Any = lead.factory
        self.lease: LeaseLike = lead.lease
        self.fenced: Callable[[int], dict[str, str]] = lead.fenced_env
        self.writer_epoch: Callable[[int], int | None] = lead.writer_epoch

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
