"""The one registry of store backends: ``PERSISTENCE_MODULE`` -> `StoreBackend` (ADR 0053).

The eventsourcing library picks a persistence module by configuration; costart's entry
points need a little more of a backend than its recorders (its lease, the file its log
lives in, its log opened read-only for replay, its mapped pages given back), and get it
here by the same configuration, never by comparing module names.
The table names each backend by topic (``module:attribute``) and resolves it on first
use the way the library resolves ``PERSISTENCE_MODULE``: this package imports no
backend, and loading one backend never loads another.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final
from urllib.parse import urlsplit

from eventsourcing.persistence import InfrastructureFactory
from eventsourcing.utils import resolve_topic

from costart.eventlog.lease_keeper import LeaseLike
from costart.eventlog.replay_log import ReplayLog

PERSISTENCE_MODULE: Final = "PERSISTENCE_MODULE"
MEMORY_MODULE: Final = "costart.eventlog.memory"
"""The Controller's persistence module when none is configured: the log in memory."""


@dataclass(frozen=True)
class Lead:
    """What leading a log takes on one backend (ADR 0009, ADR 0010)."""

    factory: InfrastructureFactory[Any]
    """Opens the led log (the leader's and the standby's recorders)."""
    lease: LeaseLike
    """The log's lease (not yet taken)."""
    fenced_env: Callable[[int], dict[str, str]]
    """The environment of a Controller whose appends are fenced at an epoch."""
    writer_epoch: Callable[[int], int | None]
    """The epoch the Controller's writer carries itself (LMDB checks it in the write
    transaction); None where ``fenced_env`` carries it to the store (PostgreSQL)."""


class NoLeaseError(ValueError):
    """The configured store keeps no lease, so nothing can lead it."""


class StoreBackend(ABC):
    """A store backend as costart's entry points see it, beside the persistence module
    the library loads for it (``module``).

    Contract: `lead` opens the log the environment names on this backend with its lease,
    or raises `NoLeaseError` for a backend without one; ``data_file`` names the file a
    store directory of this backend keeps its log in (None: the log is not a file in a
    directory), ``lock_file`` the file left beside it once the log was opened. A
    ``--store`` location (a directory, a URL) is claimed by exactly one backend
    (`claims`), which gives the environment that opens it (`location_env`) and the form
    messages may show (`describe`: no secrets). `open_replay_log` opens the log at a
    location read-only for the replay tools, or raises ValueError naming the location
    for a backend that has none. `release_mapped_pages` gives back the
    pages a one-off read of the log left resident (a no-op for a log that is not
    mapped). What a backend's recorders can do is declared on them
    (`costart.eventlog.capabilities`), not here."""

    module: str
    data_file: ClassVar[str | None] = None
    lock_file: ClassVar[str | None] = None

    @abstractmethod
    def lead(self, env: Mapping[str, str], lease_ns: int) -> Lead:
        """The factory and lease of the log ``env`` names, leases lasting ``lease_ns``."""

    def claims(self, location: str) -> bool:
        """Whether ``location`` (what ``--store`` takes) names a log on this backend."""
        return False

    def location_env(self, location: str, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with the settings that open the log at ``location``."""
        raise ValueError(f"{self.module} opens no --store location ({self.describe(location)})")

    def describe(self, location: str) -> str:
        """``location`` as messages and cache keys may show it."""
        return location

    def open_replay_log(self, location: str, env: Mapping[str, str]) -> ReplayLog:
        """The log at ``location`` opened read-only (`ReplayLog`); ``env`` holds the
        settings `location_env` gave. `FileNotFoundError` when it holds no log."""
        raise ValueError(f"the {self.module} store has no replay log ({self.describe(location)})")

    def release_mapped_pages(self, location: str) -> None:
        """Give back this process's resident pages of the log at ``location`` that a
        one-off read mapped (ADR 0050); later reads map what they need again. Raises
        `OSError` if the system refuses. Nothing to do here: the log is not mapped."""
        return


class LeaselessBackend(StoreBackend):
    """A persistence module without a lease of ours: the log in memory, or one of the
    library's own modules (SQLite, ...)."""

    def __init__(self, module: str = MEMORY_MODULE) -> None:
        self.module = module

    def lead(self, env: Mapping[str, str], lease_ns: int) -> Lead:
        raise NoLeaseError(
            f"the store keeps no lease ({PERSISTENCE_MODULE}={self.module}): "
            "only the LMDB and PostgreSQL stores can be led"
        )


REGISTRY: Final[Mapping[str, str]] = {
    "costart.store": "costart.store.backend:BACKEND",
    "costart.pgstore": "costart.pgstore.backend:BACKEND",
}
"""``PERSISTENCE_MODULE`` -> the topic of its `StoreBackend`; any other module is leaseless."""


URL_SCHEMES: Final[Mapping[str, tuple[str, ...]]] = {
    "costart.store": (),
    "costart.pgstore": ("postgresql", "postgres"),
}
"""The URL schemes each backend of `REGISTRY` claims (none: it claims directories), so
`backend_at` loads only the backends a location can be for: a directory's commands
never load a database driver (ADR 0078). tests/store/test_backend_registry.py holds it
equal to what each backend's ``claims`` says."""


def _candidates(location: str) -> list[str]:
    """The backends that may claim ``location``: those of its URL scheme, or those that
    take directories (a location without ``://``)."""
    if "://" in location:
        scheme = urlsplit(location).scheme
        return [m for m, schemes in URL_SCHEMES.items() if scheme in schemes]
    return [m for m, schemes in URL_SCHEMES.items() if not schemes]


def backend_at(location: str) -> StoreBackend:
    """The one backend that claims a ``--store`` location (a directory or a URL)."""
    claiming = [b for b in map(_resolve, _candidates(location)) if b.claims(location)]
    if len(claiming) != 1:
        names = ", ".join(b.module for b in claiming) or "none"
        raise ValueError(f"--store {location!r}: one store backend must take it, not {names}")
    return claiming[0]


def open_replay_log(location: str, env: Mapping[str, str]) -> ReplayLog:
    """The log at ``location`` opened read-only by the backend that takes it; ``env`` is
    the environment the backend's settings are added to (credentials, ...).

    Raises ValueError naming the location when no backend takes it, or when its backend
    has no replay log."""
    backend = backend_at(location)
    return backend.open_replay_log(location, backend.location_env(location, env))


def backend_for(env: Mapping[str, str]) -> StoreBackend:
    """The backend of the persistence module ``env`` configures (the log in memory when
    it configures none)."""
    module = env.get(PERSISTENCE_MODULE) or MEMORY_MODULE
    return _resolve(module) if module in REGISTRY else LeaselessBackend(module)


def _resolve(module: str) -> StoreBackend:
    topic = REGISTRY[module]
    backend = resolve_topic(topic)
    if not isinstance(backend, StoreBackend) or backend.module != module:
        raise TypeError(f"the registry's entry for {module} is not its StoreBackend: {topic}")
    return backend
