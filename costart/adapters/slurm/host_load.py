"""Slurm's other work as a `HostLoad` (`costart.placement.HostAllocator`), for a host
that embeds costart in process beside Slurm: per node of costart's cluster, what jobs
costart did not submit hold there (`Reading.outside_use`), read afresh every session;
a bind is contended by what that use grew since the session's reading (another user's
job that Slurm started meanwhile), at most the room the allocator offers
(`costart.placement.reported_load.SessionReadings`).

`costart slurm` over the wire reports the same use to `serve` instead
(``PUT /v1/nodes/{node}/outside-load``, ADR 0118), where `ReportedLoad` holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from costart.domain.capacity import Capacity
from costart.placement import SessionReadings


class SlurmHostLoad(SessionReadings):
    """``nodes``: costart's cluster's node names, in cluster order (a node Slurm does not
    report carries no outside use); ``read``: Slurm's outside use per node name, read
    afresh (``lambda: adapter.read().outside_use()``)."""

    def __init__(self, nodes: Sequence[str], read: Callable[[], Mapping[str, Capacity]]) -> None:
        super().__init__(len(nodes))
        self._nodes = list(nodes)
        self._read = read

    def _now(self) -> list[Capacity]:
        use = self._read()
        return [use.get(name, Capacity()) for name in self._nodes]
