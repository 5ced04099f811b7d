"""The LMDB store as a `Backend` of the registry (`costart.eventlog.backends`): its lease
lives in the log's own environment, and the writer carries the epoch into every write
transaction (ADR 0009)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from costart.eventlog.backends import Backend, Lead
from costart.store.datafile import DATA_FILE, LOCK_FILE
from costart.store.ha import open_factory
from costart.store.lease import Lease

MODULE: Final = "costart.store"


class LmdbBackend(Backend):
    module = MODULE
    data_file = DATA_FILE
    lock_file = LOCK_FILE

    def lead(self, env: Mapping[str, str], lease_ns: int) -> Lead:
        factory = open_factory(env)
        fixed = dict(env)
        return Lead(
            factory=factory,
            lease=Lease(factory.store, duration_ns=lease_ns),
            fenced_env=lambda epoch: fixed,  # the epoch travels with the writer
            writer_epoch=lambda epoch: epoch,  # checked in the write transaction
        )


BACKEND: Final = LmdbBackend()
