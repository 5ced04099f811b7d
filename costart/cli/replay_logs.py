"""Opening a log read-only for the forensics commands (`costart replay ...`): the one
named by ``--log DIR``, else the global ``--store``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from costart.bootstrap import Settings
from costart.cli.commands import Target, reaching_store, require_store
from costart.cli.exits import UsageError
from costart.eventlog.backends import open_replay_log
from costart.eventlog.replay_log import ReplayLog

LogOption = Annotated[Path | None, typer.Option("--log", help="log directory (default: --store)")]


@contextmanager
def opened_log(ctx: typer.Context, log_dir: Path | None) -> Iterator[ReplayLog]:
    """The log ``--log DIR`` names, else the global ``--store``, opened read-only by the
    backend the registry finds for it, with where its views are."""
    target: Target = ctx.obj
    location = str(log_dir) if log_dir is not None else target.store
    if location is None:
        raise UsageError("give the log: --log DIR (or the global --store DIR|postgresql://...)")
    with opened_at(location) as log:
        yield log


@contextmanager
def opened_at(location: str) -> Iterator[ReplayLog]:
    """The log at ``location`` (a store directory or a PostgreSQL URL), read-only."""
    # A directory that is not a store is refused as every read refuses it (exit 2).
    require_store(Target(store=location))
    with reaching_store(Target(store=location)):
        try:
            opened = open_replay_log(location, os.environ)
        except ValueError as error:  # a location no backend takes, a store without replay
            raise UsageError(str(error)) from None
        with opened as log:
            log.views_dir = Settings(store=location, cluster=None).views_dir()
            yield log
