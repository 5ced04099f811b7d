"""The recommended placement mode of a group on a cluster: a rule in code (ADR 0115).

A gang that is a large share of the pool it can run in starves when placed all at once
while a stream of smaller work keeps that pool busy (whole nodes free only by chance),
so it should plan its start ahead (``plan-ahead``: it claims its planned nodes, lends
them to work that ends in time, and holds what frees only against lower work that would
take it); anything smaller starts as soon as a reservation would start it and holds
nothing while it waits, so it should be atomic. The rule is the table `SHARE_TABLE`: the
first row whose ``at_least`` the group's share reaches gives the mode. The thresholds
and modes are the measured evidence of ADRs 0115 and 0123 and are meant to be changed
there, with the tests that pin them, when the evidence changes.

Definitions (pure, exact arithmetic, no clock):

- the group's *gang GPUs*: what must be placed together before anything starts, the sum
  over members of ``min_start`` x GPUs per task;
- its *pool*: the GPUs of the nodes that can run one task of at least one of its GPU
  members (GPU type and the whole shape fit the node, up or not); when the group must be
  packed into one domain (``placement.topology`` required), the largest such domain's;
- its *share*: gang GPUs / pool GPUs.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Final

import msgspec

from costart.domain.spec_types import GroupSpec, MemberSpec, PlacementMode
from costart.placement.cluster import Cluster, Node, shape_fits_type


class ShareRow(msgspec.Struct, frozen=True):
    """One row of the rule: a group whose share of its pool is at least ``at_least``
    gets ``mode``, for the reason ``why``."""

    at_least: Fraction
    mode: PlacementMode
    why: str


# Rows in decreasing ``at_least``; the last row must start at 0 so every share matches.
SHARE_TABLE: Final[tuple[ShareRow, ...]] = (
    ShareRow(
        Fraction(1, 3),
        "plan-ahead",
        "a third or more of its pool: placed all at once it starves behind smaller work; "
        "planned ahead it holds only what lower work would otherwise take",
    ),
    ShareRow(
        Fraction(0),
        "atomic",
        "under a third of its pool: it fits as soon as a reservation would place it, "
        "and holds nothing while it waits",
    ),
)


class Recommendation(msgspec.Struct, frozen=True):
    """The mode the rule chose, why, and the figures it chose from."""

    mode: PlacementMode
    why: str
    gang_gpus: int
    pool_gpus: int

    @property
    def share(self) -> Fraction | None:
        return Fraction(self.gang_gpus, self.pool_gpus) if self.pool_gpus else None

    def text(self) -> str:
        """One line for people: ``reserve: 128 of 256 GPUs in its pool (50%): ...``."""
        if self.pool_gpus == 0:
            return f"{self.mode}: {self.why}"
        percent = round(100 * self.gang_gpus / self.pool_gpus)
        return (
            f"{self.mode}: {self.gang_gpus} of {self.pool_gpus} GPUs in its pool"
            f" ({percent}%); {self.why}"
        )


def _can_run(member: MemberSpec, node: Node) -> bool:
    shape = member.shape
    return (
        shape_fits_type(shape, node)
        and shape.gpu <= node.gpu
        and shape.cpu <= node.cpu
        and shape.mem_gb <= node.mem_gb
    )


def gang_gpus(spec: GroupSpec) -> int:
    """GPUs that must be placed together before the group starts."""
    return sum(m.min_start * m.shape.gpu for m in spec.members)


def pool_gpus(spec: GroupSpec, cluster: Cluster) -> int:
    """GPUs of the nodes the group's GPU members can run on (the largest domain's when
    the group must be packed into one domain of a level the cluster has)."""
    wanting = [m for m in spec.members if m.shape.gpu > 0]
    eligible = [any(_can_run(m, node) for m in wanting) for node in cluster.nodes]
    topology = spec.placement.topology
    if topology is not None and topology.required and cluster.has_level(topology.level):
        per_domain: dict[str, int] = {}
        ids = cluster.domain_ids(topology.level)
        for i, node in enumerate(cluster.nodes):
            if eligible[i]:
                per_domain[ids[i]] = per_domain.get(ids[i], 0) + node.gpu
        return max(per_domain.values(), default=0)
    return sum(node.gpu for i, node in enumerate(cluster.nodes) if eligible[i])


def recommended_mode(spec: GroupSpec, cluster: Cluster) -> Recommendation:
    """The mode `SHARE_TABLE` gives ``spec`` on ``cluster``, with the reason. A group
    asking for no GPUs is atomic (nothing it waits for is scarce); a group no node can
    run keeps its own mode (admission rejects it, naming the member)."""
    gang = gang_gpus(spec)
    if gang == 0:
        return Recommendation("atomic", "asks for no GPUs: nothing to hold for it", 0, 0)
    pool = pool_gpus(spec, cluster)
    if pool == 0:
        why = "no node can run its GPU members: nothing to recommend"
        return Recommendation(spec.placement.mode, why, gang, 0)
    share = Fraction(gang, pool)
    for row in SHARE_TABLE:
        if share >= row.at_least:
            return Recommendation(row.mode, row.why, gang, pool)
    raise AssertionError("SHARE_TABLE's last row must start at 0")  # pragma: no cover
