"""The cluster's event stream: node status reports as events, so a restored or promoted
controller knows which nodes are down without asking anyone (docs/design.md §6 snapshots carry
them too)."""

from __future__ import annotations

from uuid import UUID

from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.errors import DomainError
from costart.domain.ids import CLUSTER_ID
from costart.domain.world import World


class ClusterUnit:
    """The cluster stream as an aggregate for one command (``collect_events()``)."""

    def __init__(self, world: World, actor: Actor | None = None) -> None:
        self._version = world.cluster_version
        self._events: list[ev.DomainEvent] = []
        self._actor = actor

    @property
    def id(self) -> UUID:
        return CLUSTER_ID

    @property
    def version(self) -> int:
        return self._version

    def report(
        self,
        current: str,
        node: str,
        status: ev.NodeStatus,
        at_ns: int,
        note: str | None = None,
    ) -> bool:
        """Record a status change; False (nothing recorded) when it is no change."""
        if not node:
            raise DomainError("a node report needs a node name")
        if current == status:
            return False
        self._version += 1
        self._events.append(
            ev.NodeStatusChanged(
                originator_id=CLUSTER_ID,
                originator_version=self._version,
                group_id=CLUSTER_ID,
                at_ns=at_ns,
                actor=self._actor,
                note=note,
                node=node,
                status=status,
            )
        )
        return True

    @property
    def pending_events(self) -> list[ev.DomainEvent]:
        return list(self._events)

    def collect_events(self) -> list[ev.DomainEvent]:
        events, self._events = self._events, []
        return events
