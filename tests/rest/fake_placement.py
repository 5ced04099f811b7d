"""A stand-in placement step for `serve` tests: every waiting group fits, at once.

The real co-placement step lands in `costart.placement`; this one only exercises the
serve loop's hook (``--placement tests.rest.fake_placement:factory``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from costart.domain.decisions import Decision, PlaceGroup
from costart.domain.errors import NotFound
from costart.domain.events import Assignment, DomainEvent
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World

# The nodes `decide` names: GROUP-MEMBER-nINDEX.
NODE = re.compile(r"[a-z0-9-]+-n[0-9]+")


class PlaceEverything:
    def check_feasible(self, spec: GroupSpec) -> None:
        return None

    def check_node(self, node: str) -> None:
        """Every node a placement here names exists; any other name is unknown."""
        if not NODE.fullmatch(node):
            raise NotFound(f"the cluster has no node {node!r}")

    def decide(self, world: World, now_ns: int) -> list[Decision]:
        decisions: list[Decision] = []
        for group in world.live_groups():
            if group.status != "PENDING" or group.retry_at_ns > now_ns:
                continue
            assignments = {
                m.name: tuple(Assignment(i, f"{group.name}-{m.name}-n{i}") for i in range(m.count))
                for m in group.spec.members
            }
            decisions.append(PlaceGroup(group=group.name, assignments=assignments))
        return decisions

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        """Reads the World afresh every session: nothing to learn from them."""


def factory(cluster: Path | None) -> PlaceEverything:
    return PlaceEverything()
