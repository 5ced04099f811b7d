"""A placement step wrapper for equivalence tests: each session, the plain reference step
(`CoPlacementStep`, which keeps nothing between sessions) built over a copy of the
wrapped step's cluster must decide exactly as the wrapped one (usually the incremental
step) did."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from costart.domain import decisions as dec
from costart.domain.events import DomainEvent
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World
from costart.placement import Cluster, CoPlacementStep, InMemoryAllocator


class ComparedStep:
    """Wraps ``step`` (a `CoPlacementStep`, or a wrapper with a ``.step``); ``reference``
    is the step class built fresh every session to compare with."""

    def __init__(self, step: Any, reference: type[CoPlacementStep] = CoPlacementStep) -> None:
        self.step = step
        self.reference = reference
        self.sessions = 0

    @property
    def inner(self) -> CoPlacementStep:
        return self.step.step if hasattr(self.step, "step") else self.step

    def check_feasible(self, spec: GroupSpec) -> None:
        self.step.check_feasible(spec)

    def check_node(self, node: str) -> None:
        self.step.check_node(node)

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        self.step.committed(events, position)

    def fresh(self) -> CoPlacementStep:
        """A reference step over a copy of the wrapped step's cluster, knowing nothing."""
        inner = self.inner
        cluster = Cluster(inner.cluster.levels, inner.cluster.nodes)
        return self.reference(InMemoryAllocator(cluster), inner.placement_groups)

    def decide(self, world: World, now_ns: int) -> list[dec.Decision]:
        kept = self.step.decide(world, now_ns)
        assert self.fresh().decide(world, now_ns) == kept, f"session {self.sessions} differs"
        self.sessions += 1
        self.observed(self.inner)
        return kept

    def observed(self, inner: CoPlacementStep) -> None:
        """Called after each compared session (for subclasses that count something)."""
