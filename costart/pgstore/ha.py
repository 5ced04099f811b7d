"""Leader and warm standby on one PostgreSQL log, on any number of hosts.

Mirrors the LMDB design of ADR 0009 with the lease in PostgreSQL (`lease.PgLease`):

* a **leader** takes the lease, builds its Controller with ``COSTART_LEASE_EPOCH`` set to
  the epoch (every append is then fenced in its own transaction), and renews the lease
  from a `LeaseKeeper` thread, which reports the loss once another epoch began;
* a **standby** restores once (newest snapshot + tail), tails the log into a warm
  `World`, and when the lease is free or expired takes it (epoch + 1) and folds the log
  to its end one last time -- final, since the old epoch is fenced from then on. The
  caller builds the promoted Controller from that state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment

from costart.pgstore.factory import Factory
from costart.pgstore.lease import DEFAULT_LEASE_MS, PgLease
from costart.pgstore.settings import LEASE_EPOCH

APPLICATION_NAME: Final = "costart"  # the Controller's name: its tables and env prefix


def open_factory(env: Mapping[str, str]) -> Factory:
    """The PostgreSQL factory a Controller with this environment would use."""
    factory = InfrastructureFactory.construct(Environment(APPLICATION_NAME, dict(env)))
    if not isinstance(factory, Factory):
        factory.close()
        raise ValueError("a PostgreSQL lease needs PERSISTENCE_MODULE=costart.pgstore")
    return factory


def open_lease(
    factory: Factory, holder: str | None = None, duration_ms: int = DEFAULT_LEASE_MS
) -> PgLease:
    """The lease of the Controller's log in ``factory``'s database (table created)."""
    lease = PgLease(factory.datastore, f"{APPLICATION_NAME}_events", holder, duration_ms)
    lease.ensure_table()
    return lease


def fenced_env(env: Mapping[str, str], epoch: int) -> dict[str, str]:
    """The environment of a Controller whose appends carry ``epoch``."""
    return {**env, LEASE_EPOCH: str(epoch)}


__all__ = ["fenced_env", "open_factory", "open_lease"]
