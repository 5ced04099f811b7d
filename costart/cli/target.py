"""The global options of every command: where the controller is, the cluster it places
on, and how loud the log is. Light on purpose: every command (``--help`` too) loads it,
so what a store needs loads only when a command opens one (ADR 0078)."""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from costart.settings import DEMO_CLUSTER, Settings


class Target(msgspec.Struct):
    """The global options: where the controller is, and the cluster it places on."""

    store: str | None = None
    """``--store`` as given: the store backend that takes it is the registry's choice
    (ADR 0053), read through `store_dir` and `store_url`."""
    server: str | None = None
    token: str | None = None
    ca_file: Path | None = None  # verify --server's TLS certificate against this CA
    cluster: Path | None = DEMO_CLUSTER
    rebuild_views: bool = False  # rebuild the views even over a log that lost its tail
    log_level: int = logging.WARNING
    """The level logging is configured at when a command first needs it (`log_setup`):
    a read over ``--server`` logs nothing and never loads the logging library."""
    reads_only: bool = False
    """A read (``get``, ``describe``, ``events``, ``why``): at warning level and above
    its few lines go through the standard library, without loading structlog (ADR 0078)."""

    def settings(self) -> Settings:
        """The composition root's settings for the store these options name."""
        return Settings(store=self.store, cluster=self.cluster)

    @property
    def store_dir(self) -> Path | None:
        """The store's directory, when its backend keeps the log in one (LMDB)."""
        return self.settings().store_dir

    @property
    def store_url(self) -> str | None:
        """The store's location when it is not a directory (a PostgreSQL URL)."""
        return self.settings().store_url

    def log_setup(self) -> None:
        """Configure logging (once per process) before a command opens a store."""
        from costart.logging_setup import (  # noqa: PLC0415
            configure_logging_once,
            configure_standard_library_only,
        )

        if self.reads_only and self.log_level >= logging.WARNING:
            configure_standard_library_only(self.log_level)
        else:
            configure_logging_once(level=self.log_level)
