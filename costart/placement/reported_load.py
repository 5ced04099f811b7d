"""The host's other work as readings of it: a `HostLoad` (`HostAllocator`) whose outside
use per node is read afresh at every session's start, and whose binds are contended by
what that use grew since (another scheduler's work that started meanwhile), at most the
room the allocator offers (ADR 0118).

`ReportedLoad` is the one ``costart serve`` places over: the per-node use that the
agents of a host's nodes report over the wire (`costart slurm` reports the Slurm jobs
costart did not submit). A host that embeds costart in process subclasses
`SessionReadings` with its own reading (`costart.adapters.slurm.host_load`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Final

from costart.domain import limits
from costart.domain.capacity import Capacity

ZERO: Final = Capacity()
MAX_NAMED_NODES: Final = 4
"""Nodes a pend reason names with their outside use; a count covers the rest."""
SOURCE_PATTERN: Final = limits.OUTSIDE_SOURCE_PATTERN
_SOURCE: Final = re.compile(SOURCE_PATTERN)


def _growth(now: Capacity, then: Capacity, room: Capacity) -> Capacity:
    """``now - then`` per dimension, never below zero, at most ``room``."""
    return Capacity(
        min(room.gpu, max(0, now.gpu - then.gpu)),
        min(room.cpu, max(0, now.cpu - then.cpu)),
        min(room.mem_gb, max(0, now.mem_gb - then.mem_gb)),
    )


def use_text(use: Capacity) -> str:
    """``{gpu:4, cpu:2, mem_gb:8}`` (the dimensions in use)."""
    parts = [
        f"{k}:{v}" for k, v in (("gpu", use.gpu), ("cpu", use.cpu), ("mem_gb", use.mem_gb)) if v
    ]
    return "{" + ", ".join(parts) + "}"


class SessionReadings:
    """A `HostLoad` over a reading of the outside use per node (`_now`, one entry per
    node in cluster order): `outside_use` is the reading at the session's start;
    `contend` is what the node's use grew since then (and counts it as read)."""

    def __init__(self, count: int) -> None:
        self._last: list[Capacity] = [ZERO] * count

    def _now(self) -> list[Capacity]:
        raise NotImplementedError

    def outside_use(self) -> Sequence[Capacity]:
        self._last = self._now()
        return list(self._last)

    def contend(self, node: int, room: Capacity) -> Capacity:
        now = self._now()[node]
        last = self._last[node]
        taken = _growth(now, last, room)
        self._last[node] = Capacity(
            last.gpu + taken.gpu, last.cpu + taken.cpu, last.mem_gb + taken.mem_gb
        )
        return taken


class ReportedLoad(SessionReadings):
    """Outside use per node as last reported (`report`, from any thread); a node never
    reported carries none. ``nodes``: the cluster's node names in cluster order."""

    def __init__(self, nodes: Sequence[str]) -> None:
        super().__init__(len(nodes))
        self._names = list(nodes)
        self._index = {name: i for i, name in enumerate(nodes)}
        self._use: list[Capacity] = [ZERO] * len(nodes)
        self._source: list[str] = [""] * len(nodes)
        self._lock = threading.Lock()

    def report(self, node: str, use: Capacity, source: str) -> None:
        """``node``'s outside use is now ``use``, as ``source`` (``slurm``) counts it.
        `KeyError` for a node the cluster does not have; `ValueError` for a bad source
        or a negative amount."""
        index = self._index[node]
        if not _SOURCE.fullmatch(source):
            raise ValueError(f"source {source!r}: expected {SOURCE_PATTERN}")
        if min(use.gpu, use.cpu, use.mem_gb) < 0:
            raise ValueError(f"node {node}: a negative outside use {use_text(use)}")
        with self._lock:
            if self._use[index] != use:  # an unchanged entry stays the same object
                self._use[index] = ZERO if use == ZERO else use
            self._source[index] = source

    def reported(self, node: str) -> Capacity:
        with self._lock:
            return self._use[self._index[node]]

    def _now(self) -> list[Capacity]:
        with self._lock:
            return list(self._use)

    def describe(self, use: Sequence[Capacity]) -> str | None:
        """The nodes with outside use in ``use`` (a session's reading), in words for a
        pend reason: ``outside work holds n1 {gpu:4, cpu:1} (slurm), ...``; None when
        no node has any."""
        busy = [i for i, u in enumerate(use) if u != ZERO]
        if not busy:
            return None
        with self._lock:
            sources = list(self._source)
        named = [
            f"{self._names[i]} {use_text(use[i])}" + (f" ({sources[i]})" if sources[i] else "")
            for i in busy[:MAX_NAMED_NODES]
        ]
        more = len(busy) - MAX_NAMED_NODES
        return (
            "outside work holds "
            + ", ".join(named)
            + (f" and {more} more nodes" if more > 0 else "")
        )
