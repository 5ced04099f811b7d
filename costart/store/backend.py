"""The LMDB store as a `StoreBackend` of the registry (`costart.eventlog.backends`): its lease
lives in the log's own environment, and the writer carries the epoch into every write
transaction (ADR 0009)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from costart.eventlog.backends import PERSISTENCE_MODULE, Lead, StoreBackend
from costart.eventlog.replay_log import ReplayLog
from costart.lmdbkit.datafile import DATA_FILE, LOCK_FILE
from costart.lmdbkit.resident import release_mapped_pages
from costart.store.ha import open_factory
from costart.store.lease import Lease
from costart.store.replay_log import LmdbReplayLog
from costart.store.settings import PATH

MODULE: Final = "costart.store"


class LmdbBackend(StoreBackend):
    module = MODULE
    data_file = DATA_FILE
    lock_file = LOCK_FILE

    def claims(self, location: str) -> bool:
        return "://" not in location  # a directory; a URL belongs to another backend

    def location_env(self, location: str, env: Mapping[str, str]) -> dict[str, str]:
        # The environment may name another module for a directory (the library's SQLite).
        module = env.get(PERSISTENCE_MODULE) or MODULE
        return {**env, PERSISTENCE_MODULE: module, PATH: location}

    def open_replay_log(self, location: str, env: Mapping[str, str]) -> ReplayLog:
        return LmdbReplayLog(Path(location))  # an LMDB log needs nothing from ``env``

    def release_mapped_pages(self, location: str) -> None:
        release_mapped_pages(Path(location) / DATA_FILE)

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
