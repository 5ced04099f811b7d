"""Closing what an open made when the open fails, on the thread that failed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=Closable)


@contextmanager
def closed_if_failed(opened: T) -> Iterator[T]:
    """Yield ``opened``; close it if the block raises, and raise on. Closed here, on this
    thread: left to the collector, a connection pool's close may run on one of its own
    workers, which cannot join itself (a warning, and the pool's threads left)."""
    try:
        yield opened
    except BaseException:
        opened.close()
        raise
