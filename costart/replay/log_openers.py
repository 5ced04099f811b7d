"""The replay log of each store backend, chosen through the backend registry (ADR 0053).

The backend that takes a ``--store``/``--log`` location (`backend_at`) names its
persistence module; this table maps it to the function that opens that backend's log
read-only for replay. The replay tools never compare URL schemes or module names
themselves. Entries are topics resolved on first use, so replaying an LMDB log never
imports the PostgreSQL driver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, cast

from eventsourcing.utils import resolve_topic

from costart.eventlog.backends import backend_at
from costart.replay.logfile import ClosingLog

OPENERS: Final[Mapping[str, str]] = {
    "costart.store": "costart.replay.logfile:open_log_at",
    "costart.pgstore": "costart.replay.pglog:open_log_at",
}
"""A store backend's persistence module -> the topic of ``open(location, env)``."""

Opener = Callable[[str, Mapping[str, str]], ClosingLog]


def open_replay_log(location: str, env: Mapping[str, str]) -> ClosingLog:
    """The log at ``location`` opened read-only by the backend that takes it; ``env``
    is the environment the backend's settings are added to (credentials, ...).

    Raises ValueError naming the location when no backend takes it, or when its backend
    has no replay log."""
    backend = backend_at(location)
    topic = OPENERS.get(backend.module)
    if topic is None:
        raise ValueError(
            f"the {backend.module} store has no replay log ({backend.describe(location)})"
        )
    opener = cast(Opener, resolve_topic(topic))
    return opener(location, backend.location_env(location, env))
