"""`DomainSums`: per topology domain, how many tasks of one shape fit in it, kept current
as its nodes' fit counts move (the plain version sums the nodes' counts every time it is
asked: `costart.placement.capacity.CapacityView.domain_sums` without a summary).

A shape's fit counts per node (`CapacityView.fits`) are summed per domain of every
configured level (zone, block, rack: the node level is the counts themselves). The
planner asks, for a pack scope, which domains within its allowed node range can hold a
member's tasks (`_Search._candidates`): a whole domain's sum is read here instead of
summed over its nodes, so the question costs the number of domains, not of nodes, and
the search descends only into the domains whose sum can hold the request. A node's
count moving changes one entry per level (`add`).

The incremental step carries one per view kind and shape from session to session with
the carried fit counts (`costart.placement.incremental.carried`), and tests compare each
with a recount after every sync (`tests/placement/test_domain_sums.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.placement.cluster import Cluster


class DomainSums:
    """Per level of ``cluster.levels``: domain id -> the sum of ``fits`` over its nodes.
    Whoever changes an entry of ``fits`` calls `add` with the difference."""

    __slots__ = ("_cluster", "_ids", "by_level")

    def __init__(self, cluster: Cluster, by_level: dict[str, dict[str, int]]) -> None:
        self._cluster = cluster
        self.by_level = by_level
        self._ids = [cluster.domain_ids(level) for level in cluster.levels]

    @classmethod
    def of(cls, cluster: Cluster, fits: Sequence[int]) -> DomainSums:
        """Summed from ``fits``: one C-level sum per domain (every domain is a
        contiguous run of node order)."""
        n = len(fits)
        return cls(
            cluster,
            {
                level: {d: sum(fits[s:e]) for d, s, e in cluster.runs_within(level, 0, n)}
                for level in cluster.levels
            },
        )

    def copy(self) -> DomainSums:
        return DomainSums(self._cluster, {k: dict(v) for k, v in self.by_level.items()})

    def add(self, node: int, delta: int) -> None:
        """Node ``node``'s count moved by ``delta``."""
        if delta:
            for ids, sums in zip(self._ids, self.by_level.values(), strict=True):
                sums[ids[node]] += delta

    def within(self, level: str, start: int, end: int, fits: Sequence[int]) -> dict[str, int]:
        """The sum per domain of ``level`` that has nodes in ``[start, end)`` (in node
        order), over those nodes: a whole domain's from the summary, a clipped one's
        summed from ``fits`` (the counts this summary sums)."""
        sums = self.by_level[level]
        spans = self._cluster.span
        out: dict[str, int] = {}
        for domain, s, e in self._cluster.runs_within(level, start, end):
            out[domain] = sums[domain] if spans(level, domain) == (s, e) else sum(fits[s:e])
        return out
