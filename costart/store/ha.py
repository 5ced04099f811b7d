"""Leader and warm standby on one LMDB environment (ADR 0009): the factory that holds the
environment's lease. The standby itself is backend-neutral (`costart.eventlog.standby`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import Environment

from costart.store.factory import Factory

APPLICATION_NAME: Final = "costart"  # the Controller's name (its log and env prefix)


def open_factory(env: Mapping[str, str]) -> Factory:
    """The LMDB factory a Controller with this environment would use. HA needs the lease
    in the log's environment, so any other persistence module is refused."""
    factory = InfrastructureFactory.construct(Environment(APPLICATION_NAME, dict(env)))
    if not isinstance(factory, Factory):
        raise ValueError(
            "leases and standbys need the LMDB store (PERSISTENCE_MODULE=costart.store)"
        )
    return factory
