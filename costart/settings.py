"""What a controller is built from (`Settings`), apart from the composition root that
builds it (`costart.bootstrap`, which re-exports these names): a command that only
reads a store names it through these settings without loading the Controller, the
placement step or the simulator's ports (ADR 0078).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    from costart.eventlog.backends import StoreBackend

DEMO_CLUSTER: Final = Path(__file__).resolve().parents[1] / "scenarios" / "cluster-demo.toml"
VIEWS_DIR: Final = "views"
VIEWS_DIR_VARIABLE: Final = "COSTART_VIEWS_DIR"


def backend_at(location: str) -> StoreBackend:
    """`costart.eventlog.backends.backend_at`, loaded when a store is named."""
    from costart.eventlog.backends import backend_at as registry_choice  # noqa: PLC0415

    return registry_choice(location)


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    """What a controller is built from.

    ``store`` is an LMDB directory or a ``postgresql://`` URL; None keeps the log in
    memory. ``cluster`` is the cluster file the placement step (and so the feasibility
    check) works on; None builds a controller without a step, driven by hand
    (``apply_decisions``) — then nothing can check feasibility, so entry points that
    accept specs from users always give one. ``env`` adds to the controller's
    environment (snapshot interval, durability, ...)."""

    store: str | None = None
    cluster: Path | None = DEMO_CLUSTER
    placement: str | None = None
    env: Mapping[str, str] = msgspec.field(default_factory=dict)

    @property
    def store_backend(self) -> StoreBackend | None:
        """The store backend that takes ``store`` (the registry's choice), None for memory."""
        return backend_at(self.store) if self.store is not None else None

    @property
    def store_url(self) -> str | None:
        """The store's location when it is not a directory (a PostgreSQL URL)."""
        backend = self.store_backend
        return self.store if backend is not None and backend.data_file is None else None

    @property
    def store_dir(self) -> Path | None:
        """The store's directory, when it keeps its log in one (LMDB)."""
        backend = self.store_backend
        keeps_files = backend is not None and backend.data_file is not None
        return Path(self.store) if keeps_files and self.store is not None else None

    def controller_env(self) -> dict[str, str]:
        """The controller's environment: the process environment, the settings that open
        the store (from the backend that takes it), then ``env``."""
        env = dict(os.environ)
        if self.store is not None:
            env = backend_at(self.store).location_env(self.store, env)
        env.update(self.env)
        return env

    def views_dir(self) -> Path | None:
        """Where the views of this store live: ``DIR/views`` for a directory; for a
        PostgreSQL log ``$COSTART_VIEWS_DIR``, else a per-log directory in the user's cache
        (views are a local, rebuildable cache); None for a log in memory."""
        if self.store_dir is not None:
            return self.store_dir / VIEWS_DIR
        if self.store_url is None:
            return None
        configured = os.environ.get(VIEWS_DIR_VARIABLE)
        if configured:
            return Path(configured)
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        shown = backend_at(self.store_url).describe(self.store_url)  # no password
        key = hashlib.sha256(shown.encode()).hexdigest()[:16]
        return cache / "costart" / f"views-{key}"
