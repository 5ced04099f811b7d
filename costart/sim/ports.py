"""What the simulator needs from the controller: a small Protocol, and a factory.

`costart.sim` may not import the application (docs/design.md §2: only app, cli and rest wire
everything), so the engine takes a factory that builds a Controller-like object; the CLI
(and tests) pass one building `costart.controller.Controller`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import msgspec

from costart.domain.actors import Actor
from costart.domain.decisions import Decision
from costart.domain.errors import SpecError
from costart.domain.events import DomainEvent, NodeStatus
from costart.domain.ids import id_text
from costart.domain.spec_types import FailureReason, GroupSpec
from costart.domain.states import GroupState
from costart.domain.world import World
from costart.placement.step import CoPlacementStep

Clock = Callable[[], int]


SIM_HOST = Actor.host("sim")
"""The simulated host controller: node reports, cancels, claim drivers."""
_AGENTS: dict[str, Actor] = {}


def agent_of(node: str) -> Actor:
    """The simulated node agent of ``node`` (who reports its tasks)."""
    actor = _AGENTS.get(node)
    if actor is None:
        actor = _AGENTS[node] = Actor.agent(node)
    return actor


# An id as the World's maps key it (its canonical text): the World's own cache of
# id texts, by the id's integer.
key_of = id_text


class ReportLike(Protocol):
    """What a report returns (`costart.controller.ReportResult`): the events it wrote, if any."""

    @property
    def events(self) -> tuple[DomainEvent, ...]: ...


class SimController(Protocol):
    """The Controller commands the simulated embedding controller calls. Every command
    returns the events it wrote, in log order (`submit_events` with the new group)."""

    world: World

    @property
    def recorder(self) -> Any: ...

    def submit_events(
        self, spec: GroupSpec, *, actor: Actor | None = None
    ) -> tuple[GroupState, list[DomainEvent]]: ...

    def schedule(self, now_ns: int | None = None) -> list[DomainEvent]: ...

    def tick(self, now_ns: int | None = None) -> list[DomainEvent]: ...

    def claim_ready(
        self, member: str, claim: str, attempt: int, *, actor: Actor, key: str | None = None
    ) -> ReportLike: ...

    def claim_failed(
        self,
        member: str,
        claim: str,
        attempt: int,
        reason: str,
        *,
        actor: Actor,
        key: str | None = None,
    ) -> ReportLike: ...

    def task_started(
        self, member: str, task: int, attempt: int, *, actor: Actor, key: str | None = None
    ) -> ReportLike: ...

    def task_succeeded(
        self, member: str, task: int, attempt: int, *, actor: Actor, key: str | None = None
    ) -> ReportLike: ...

    def task_failed(
        self,
        member: str,
        task: int,
        attempt: int,
        reason: FailureReason,
        *,
        exit_code: int | None = None,
        actor: Actor,
        key: str | None = None,
    ) -> ReportLike: ...

    def cancel(self, name: str, *, actor: Actor) -> list[DomainEvent]: ...

    def scale(self, member: str, replicas: int, *, actor: Actor) -> list[DomainEvent]: ...

    def set_node_status(
        self, node: str, status: NodeStatus, now_ns: int | None = None, *, actor: Actor
    ) -> list[DomainEvent]: ...

    def may_start(self, member: str) -> bool: ...

    def read_events(
        self, after: int = 0, until: int | None = None
    ) -> Iterator[tuple[int, DomainEvent]]: ...


class PlacementStepLike(Protocol):
    """The placement step as the Controller calls it (`costart.controller.PlacementStep`)."""

    def check_feasible(self, spec: GroupSpec) -> None: ...

    def decide(self, world: World, now_ns: int) -> list[Decision]: ...

    def committed(self, events: Sequence[DomainEvent], position: int) -> None: ...

    def check_node(self, node: str) -> None: ...


class FeasibilityCache:
    """A placement step whose submit-time feasibility answer is remembered per spec.

    Feasibility is a pure function of the spec (its name aside) and the cluster file —
    it asks whether the group fits the whole empty cluster — and the simulator submits
    thousands of identical specs (every task of the independent baseline), each of which
    would otherwise scan every node. Everything else goes to the real step.
    """

    def __init__(self, step: CoPlacementStep, answers: dict[bytes, SpecError | None]) -> None:
        self.step = step
        self._answers = answers

    def check_feasible(self, spec: GroupSpec) -> None:
        key = _encoder.encode(msgspec.structs.replace(spec, name="-"))
        if key not in self._answers:
            try:
                self.step.check_feasible(spec)
                self._answers[key] = None
            except SpecError as error:
                self._answers[key] = error
        answer = self._answers[key]
        if answer is not None:
            raise SpecError(answer.path, answer.reason)

    def decide(self, world: World, now_ns: int) -> list[Decision]:
        return self.step.decide(world, now_ns)

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        self.step.committed(events, position)

    def check_node(self, node: str) -> None:
        self.step.check_node(node)


_encoder = msgspec.msgpack.Encoder()


class ControllerFactory(Protocol):
    """Build a controller over a placement step and a virtual clock. ``restart_of``: a
    crashed controller whose log and snapshots the new one restores from."""

    def __call__(
        self,
        *,
        placement: PlacementStepLike,
        clock: Clock,
        env: Mapping[str, str],
        restart_of: SimController | None,
    ) -> SimController: ...
