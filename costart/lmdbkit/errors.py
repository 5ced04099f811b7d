"""Errors of an LMDB environment's files, the log's and the views' alike: a data file
that is not whole, a write that met a full disk or map. Each is the backend-neutral
error its callers catch (`costart.eventlog.errors`), naming the file."""

from __future__ import annotations

import os

from costart.eventlog.errors import DamagedStoreError, OutOfSpaceError


class DataFileError(DamagedStoreError):
    """An LMDB data file is not whole (found before mapping it: see `datafile`)."""

    def __init__(self, path: os.PathLike[str] | str, problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path} {problem}")

    def __reduce__(self) -> tuple[type[DataFileError], tuple[str, str]]:
        return type(self), (self.path, self.problem)


class StoreFullError(OutOfSpaceError):
    """`OutOfSpaceError` of the LMDB files (the log's and the views'): a write met a full
    disk (or a map that may not grow further); nothing of it was written. The message
    names the store and the space the write needed."""

    def __init__(self, path: str, needed: int, free: int | None, cause: str) -> None:
        self.path = path
        self.needed = needed
        self.free = free
        self.cause = cause
        room = "" if free is None else f", {free} bytes free on its filesystem"
        super().__init__(
            f"the store at {path} is out of space ({cause}): the write needed about "
            f"{needed} bytes more{room}; nothing of it was written -- free space and "
            "start again"
        )

    def __reduce__(self) -> tuple[type[StoreFullError], tuple[str, int, int | None, str]]:
        return type(self), (self.path, self.needed, self.free, self.cause)
