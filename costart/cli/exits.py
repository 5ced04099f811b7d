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

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import typer

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


# Which errors map to which code, by the module that defines them. A module not yet
# imported cannot have raised its errors, so the check never imports one (a read over
# --server loads neither the store's errors nor the log writer's, ADR 0078).
_CODES: Final = (
    ("costart.eventlog.errors", "LogTailLostError", EXIT_TAIL_LOST),
    ("costart.eventlog.errors", "DamagedStoreError", EXIT_DAMAGED),
    ("costart.eventlog.errors", "OutOfSpaceError", EXIT_NO_SPACE),
    ("costart.domain.errors", "SpecError", EXIT_INVALID),
    ("costart.domain.errors", "NotFound", EXIT_NOT_FOUND),
    ("costart.domain.errors", "Conflict", EXIT_CONFLICT),
    ("costart.domain.errors", "IllegalTransition", EXIT_CONFLICT),
    (__name__, "AccessDenied", EXIT_DENIED),
    (__name__, "UsageError", EXIT_USAGE),
    ("costart.files", "UnreadableFileError", EXIT_USAGE),
)
# The errors `reported` turns into a line and a code (others are bugs: a traceback).
_REPORTED: Final = (
    ("costart.domain.errors", "DomainError"),
    (__name__, "AccessDenied"),
    (__name__, "Unavailable"),
    (__name__, "UsageError"),
    ("builtins", "OSError"),
    ("costart.eventlog.errors", "DamagedStoreError"),
    ("costart.eventlog.errors", "OutOfSpaceError"),
    ("costart.log_writer", "ControllerStoppedError"),
)


def _is(error: BaseException, module: str, name: str) -> bool:
    loaded = sys.modules.get(module)
    kind = getattr(loaded, name, None) if loaded is not None else None
    return isinstance(kind, type) and isinstance(error, kind)


def exit_code(error: BaseException) -> int:
    if _is(error, "costart.log_writer", "ControllerStoppedError") and error.__cause__:
        return exit_code(error.__cause__)  # why the write failed
    for module, name, code in _CODES:
        if _is(error, module, name):
            return code
    return EXIT_ERROR


@contextmanager
def reported() -> Iterator[None]:
    """Turn the errors a command may meet into a stderr line and an exit code."""
    try:
        yield
    except BrokenPipeError:
        raise  # the reader went away: not an error (`costart.cli.lazy_group`)
    except Exception as error:
        if not any(_is(error, module, name) for module, name in _REPORTED):
            raise
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(exit_code(error)) from None
