"""`DomainSums`: per topology domain, how many tasks of one shape fit in it, kept current
as its nodes' fit counts move (the plain version sums the nodes' counts every time it is
asked: `costart.placement.capacity.CapacityView.domain_sums` without a summary).

A shape's fit counts per node (`CapacityView.fits`) are summed per domain of a
configured level (zone, block, rack: the node level is the counts themselves). The
planner asks, for a pack scope, which domains within its allowed node range can hold a
member's tasks (`_Search._candidates`): a whole domain's sum is read here instead of
summed over its nodes, so the question costs the number of domains, not of nodes, and
the search descends only into the domains whose sum can hold the request. A node's
count moving changes one entry per level (`add`).

A level is summed when first asked over a wide range (`WIDE`): a question about a few
domains (a rack within the block a scope chose) is answered by summing their nodes,
which costs less than a level of sums over the whole cluster would in a session that
asks it once. A session's sums start from the carried ones (``base``), moved on the
nodes the session has touched.

The incremental step carries one per view kind and shape from session to session with
the carried fit counts (`costart.placement.incremental.carried`), and tests compare each
with a recount after every sync (`tests/placement/test_domain_sums.py`,
`tests/placement/test_session_ledger_current.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from costart.placement.cluster import Cluster

WIDE = 8  # a level is summed when asked over more than 1/WIDE of the nodes


class DomainSums:
    """Per level of ``cluster.levels`` summed so far: domain id -> the sum of the counts
    it sums over the domain's nodes. Whoever changes a count calls `add` with the
    difference. ``base``: the sums of ``base_fits``, from which this one's levels start,
    moved on the nodes of ``moved`` (read when a level is made: it may grow until then)."""

    __slots__ = ("_base", "_base_fits", "_cluster", "_ids", "_moved", "by_level")

    def __init__(
        self,
        cluster: Cluster,
        base: DomainSums | None = None,
        base_fits: Sequence[int] = (),
        moved: Collection[int] = (),
    ) -> None:
        self._cluster = cluster
        self._base, self._base_fits, self._moved = base, base_fits, moved
        self.by_level: dict[str, dict[str, int]] = {}
        self._ids: dict[str, list[str]] = {}

    @classmethod
    def of(cls, cluster: Cluster, fits: Sequence[int]) -> DomainSums:
        """Every level summed from ``fits`` (a recount)."""
        sums = cls(cluster)
        for level in cluster.levels:
            sums.level(level, fits)
        return sums

    def level(self, level: str, fits: Sequence[int]) -> dict[str, int]:
        """``level``'s sums, made on first use from ``fits`` (the counts this sums): the
        base's, moved where they differ, or one C-level sum per domain (every domain is
        a contiguous run of node order)."""
        sums = self.by_level.get(level)
        if sums is None:
            ids = self._ids[level] = self._cluster.domain_ids(level)
            base, base_fits = self._base, self._base_fits
            if base is not None:
                sums = dict(base.level(level, base_fits))
                for i in sorted(self._moved):
                    delta = fits[i] - base_fits[i]
                    if delta:
                        sums[ids[i]] += delta
            else:
                sums = _summed(self._cluster.runs_within(level, 0, len(fits)), fits)
            self.by_level[level] = sums
        return sums

    def add(self, node: int, delta: int) -> None:
        """Node ``node``'s count moved by ``delta``."""
        if delta:
            ids = self._ids
            for level, sums in self.by_level.items():
                sums[ids[level][node]] += delta

    def within(self, level: str, start: int, end: int, fits: Sequence[int]) -> dict[str, int]:
        """The sum per domain of ``level`` that has nodes in ``[start, end)`` (in node
        order), over those nodes: a whole domain's from the summary, a clipped one's
        summed from ``fits`` (the counts this summary sums)."""
        runs = self._cluster.runs_within(level, start, end)
        if level not in self.by_level and (end - start) * WIDE <= len(fits):
            return {domain: sum(fits[s:e]) for domain, s, e in runs}
        sums = self.level(level, fits)
        spans = self._cluster.span
        out: dict[str, int] = {}
        for domain, s, e in runs:
            out[domain] = sums[domain] if spans(level, domain) == (s, e) else sum(fits[s:e])
        return out


def _summed(runs: list[tuple[str, int, int]], fits: Sequence[int]) -> dict[str, int]:
    """Per run (a domain and its nodes ``[start, end)``, contiguous and in order), the
    sum of its counts. Counts in bytes are summed in
    one vectorised pass when the runs reach the last count (`numpy.add.reduceat`, a
    few instructions a node against a sum of each run's slice, ADR 0159); otherwise a
    run at a time (the plain way)."""
    if isinstance(fits, bytes | bytearray) and runs and runs[-1][2] == len(fits):
        starts = np.fromiter((start for _, start, _ in runs), dtype=np.intp, count=len(runs))
        counts = np.frombuffer(fits, dtype=np.uint8)
        totals = np.add.reduceat(counts, starts, dtype=np.int64).tolist()
        return {domain: total for (domain, _, _), total in zip(runs, totals, strict=True)}
    return {d: sum(fits[s:e]) for d, s, e in runs}
