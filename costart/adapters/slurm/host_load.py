"""Slurm's other work as a `HostLoad` (`costart.placement.HostAllocator`), for a host
that embeds costart in process beside Slurm: per node of costart's cluster, what jobs
costart did not submit hold there (`Reading.outside_use`), read afresh every session;
a bind is contended by what that use grew since the session's reading (another user's
job that Slurm started meanwhile), at most the room the allocator offers.

`costart slurm` over the wire does not use it yet (ADR 0096: the wire has no way to hand
it to `serve`'s placement); it is the piece such a route would feed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from costart.domain.capacity import Capacity

ZERO = Capacity()


def _growth(now: Capacity, then: Capacity, room: Capacity) -> Capacity:
    """``now - then`` per dimension, never below zero, at most ``room``."""
    return Capacity(
        min(room.gpu, max(0, now.gpu - then.gpu)),
        min(room.cpu, max(0, now.cpu - then.cpu)),
        min(room.mem_gb, max(0, now.mem_gb - then.mem_gb)),
    )


class SlurmHostLoad:
    """``nodes``: costart's cluster's node names, in cluster order (a node Slurm does not
    report carries no outside use); ``read``: Slurm's outside use per node name, read
    afresh (``lambda: adapter.read().outside_use()``)."""

    def __init__(self, nodes: Sequence[str], read: Callable[[], Mapping[str, Capacity]]) -> None:
        self._nodes = list(nodes)
        self._read = read
        self._last: list[Capacity] = [ZERO] * len(self._nodes)

    def _use(self) -> list[Capacity]:
        use = self._read()
        return [use.get(name, ZERO) for name in self._nodes]

    def outside_use(self) -> Sequence[Capacity]:
        self._last = self._use()
        return list(self._last)

    def contend(self, node: int, room: Capacity) -> Capacity:
        now = self._use()[node]
        taken = _growth(now, self._last[node], room)
        last = self._last[node]
        self._last[node] = Capacity(
            last.gpu + taken.gpu, last.cpu + taken.cpu, last.mem_gb + taken.mem_gb
        )
        return taken
