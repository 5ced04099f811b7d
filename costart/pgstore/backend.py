"""The PostgreSQL store as a `StoreBackend` of the registry (`costart.eventlog.backends`): its
lease is a row beside the log, and a leader's environment carries the epoch to the
append function, which checks it in the append's own transaction (ADR 0010)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from costart.eventlog import closed_if_failed
from costart.eventlog.backends import Lead, StoreBackend
from costart.eventlog.replay_log import ReplayLog
from costart.pgstore.ha import fenced_env, open_factory, open_lease
from costart.pgstore.replay_log import PgReplayLog
from costart.pgstore.settings import MODULE, env_for_url, is_url, redact


class PgBackend(StoreBackend):
    module = MODULE

    def claims(self, location: str) -> bool:
        return is_url(location)

    def location_env(self, location: str, env: Mapping[str, str]) -> dict[str, str]:
        return {**env, **env_for_url(location)}

    def describe(self, location: str) -> str:
        return redact(location)

    def open_replay_log(self, location: str, env: Mapping[str, str]) -> ReplayLog:
        return PgReplayLog(env, location)

    def lead(self, env: Mapping[str, str], lease_ns: int) -> Lead:
        factory = open_factory(env)
        fixed = dict(env)
        with closed_if_failed(factory):
            lease = open_lease(factory, duration_ms=max(lease_ns // 10**6, 1))
        return Lead(
            factory=factory,
            lease=lease,
            fenced_env=lambda epoch: fenced_env(fixed, epoch),
            writer_epoch=lambda epoch: None,  # fenced through the environment
        )


BACKEND: Final = PgBackend()
