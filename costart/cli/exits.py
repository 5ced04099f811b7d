"""Exit codes a shell script can rely on (ADR 0006), and the errors that map to them.

===  ==========================================================
0    success
1    any other error (server unreachable, bad request, internal)
2    usage error (bad options or arguments; from the parser); a file named on the
     command line (spec, cluster, scenario, tokens, trace) that is missing, a
     directory or unreadable; a ``--store`` that is not a store (ADR 0081)
3    invalid spec (the message names the field)
4    not found (no such group or member)
5    conflict (a live group has the name; the group is terminal)
6    unauthorized or forbidden (no/bad token; not the owner)
7    damaged store (a record, snapshot or data file fails its check; the message
     names the file or log position); nothing was written
8    the log lost its tail: it ends before (or differs at) the position the views
     or a snapshot were built to; nothing was written or rebuilt (``--rebuild-views``
     rebuilds the views from the log as it is)
9    out of space: a write met a full disk (or a map that cannot grow); nothing
     acknowledged was lost, start again once space is freed
===  ==========================================================

Messages go to stderr as ``error: ...``; stdout carries only the requested output.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import typer

from costart.domain.errors import Conflict, DomainError, IllegalTransition, NotFound, SpecError
from costart.eventlog.errors import DamagedStoreError, LogTailLostError, OutOfSpaceError
from costart.files import UnreadableFileError
from costart.log_writer import ControllerStoppedError

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
EXIT_USAGE: Final = 2
EXIT_INVALID: Final = 3
EXIT_NOT_FOUND: Final = 4
EXIT_CONFLICT: Final = 5
EXIT_DENIED: Final = 6
EXIT_DAMAGED: Final = 7
EXIT_TAIL_LOST: Final = 8
EXIT_NO_SPACE: Final = 9


class AccessDenied(Exception):
    """The server refused the caller: no or a bad token (401) or not the owner (403)."""


class Unavailable(Exception):
    """The server could not be reached, or answered something unexpected."""


class UsageError(Exception):
    """The command line is incomplete (e.g. neither ``--store`` nor ``--server``)."""


def exit_code(error: BaseException) -> int:
    if isinstance(error, ControllerStoppedError) and error.__cause__ is not None:
        return exit_code(error.__cause__)  # why the write failed
    if isinstance(error, LogTailLostError):
        return EXIT_TAIL_LOST
    if isinstance(error, DamagedStoreError):
        return EXIT_DAMAGED
    if isinstance(error, OutOfSpaceError):
        return EXIT_NO_SPACE
    if isinstance(error, SpecError):
        return EXIT_INVALID
    if isinstance(error, NotFound):
        return EXIT_NOT_FOUND
    if isinstance(error, Conflict | IllegalTransition):
        return EXIT_CONFLICT
    if isinstance(error, AccessDenied):
        return EXIT_DENIED
    if isinstance(error, UsageError | UnreadableFileError):
        return EXIT_USAGE
    return EXIT_ERROR


@contextmanager
def reported() -> Iterator[None]:
    """Turn the errors a command may meet into a stderr line and an exit code."""
    try:
        yield
    except (
        DomainError,
        AccessDenied,
        Unavailable,
        UsageError,
        OSError,
        DamagedStoreError,
        OutOfSpaceError,
        ControllerStoppedError,
    ) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code(error)) from None
