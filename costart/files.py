"""Reading a file the user named (a spec, a cluster, a scenario, a tokens file), with one
error that says which file, what it is for, and why it cannot be read.

`UnreadableFileError` is an `OSError`, so code that already handles I/O errors still does;
the command line reports it in one line with the usage exit code (`costart.cli.exits`).
"""

from __future__ import annotations

import os
from pathlib import Path


class UnreadableFileError(OSError):
    """A file named by the user is missing, a directory, or not readable."""


def why_unreadable(error: OSError) -> str:
    """The reason in words: ``no such file``, ``is a directory``, ``permission denied``."""
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a file"
    if isinstance(error, PermissionError):
        return "permission denied"
    return error.strerror or os.strerror(error.errno or 0) or type(error).__name__


def read_named_file(path: Path, what: str) -> bytes:
    """The bytes of ``path``; `UnreadableFileError` ``cannot read <what> <path>: <why>``."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise UnreadableFileError(f"cannot read {what} {path}: {why_unreadable(error)}") from None


def why_not_writable(directory: Path) -> str | None:
    """Why this process cannot write in ``directory`` (a read-only filesystem, no write
    permission), or None if it can. Root writes whatever the mode: only the filesystem
    flag stops it."""
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "on a read-only filesystem"
    except OSError as error:
        return why_unreadable(error)
    if not os.access(directory, os.W_OK):
        return "no write permission"
    return None
