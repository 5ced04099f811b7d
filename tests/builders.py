"""Small fluent builders for specs and a controller on a virtual clock."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller, split_member_ref
from costart.domain.actors import Actor
from costart.domain.decisions import PlaceGroup
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment, DomainEvent
from costart.domain.spec import spec_from_object
from costart.domain.spec_types import FailureReason, GroupSpec
from costart.domain.states import MemberState
from costart.domain.world import World

SECOND_NS = 10**9


class GroupBuilder:
    def __init__(self, name: str = "g1", owner: str = "alice") -> None:
        self.doc: dict[str, Any] = {"name": name, "owner": owner, "members": []}

    def with_member(
        self,
        name: str,
        *,
        gpu: int = 1,
        cpu: int = 0,
        mem_gb: int = 0,
        gpu_type: str | None = None,
        tasks: int | None = None,
        replicas: int | None = None,
        min_start: int | None = None,
        min_running: int | None = None,
        topology: dict[str, Any] | str | None = None,
        claims: tuple[str, ...] = (),
        task_claims: tuple[str, ...] = (),
        max_runtime: str | None = None,
        preemptible: bool = False,
    ) -> GroupBuilder:
        shape: dict[str, Any] = {"gpu": gpu}
        if cpu or mem_gb:
            shape |= {"cpu": cpu, "mem_gb": mem_gb}
        if gpu_type is not None:
            shape["gpu_type"] = gpu_type
        member: dict[str, Any] = {
            "name": name,
            "kind": "job" if replicas is None else "replica-set",
            "shape": shape,
            "claims": list(claims),
        }
        if task_claims:
            member["task_claims"] = list(task_claims)
        if max_runtime is not None:
            member["max_runtime"] = max_runtime
        if preemptible:
            member["preemptible"] = True
        for key, value in (
            ("tasks", tasks),
            ("replicas", replicas),
            ("min_start", min_start),
            ("min_running", min_running),
            ("topology", topology),
        ):
            if value is not None:
                member[key] = value
        self.doc["members"].append(member)
        return self

    def reserve(self, timeout: str = "15m", backoff: str = "1m") -> GroupBuilder:
        return self.with_placement(mode="reserve", timeout=timeout, backoff=backoff)

    def atomic(self) -> GroupBuilder:
        return self.with_placement(mode="atomic")

    def with_topology(self, value: dict[str, Any] | str) -> GroupBuilder:
        return self.with_placement(topology=value)

    def with_priority(self, priority: int) -> GroupBuilder:
        self.doc["priority"] = priority
        return self

    def with_rule(
        self,
        action: str,
        *,
        members: tuple[str, ...] = (),
        reasons: tuple[str, ...] = ("any",),
        max_restarts: int = 0,
    ) -> GroupBuilder:
        rules = self.doc.setdefault("failure", {}).setdefault("rules", [])
        rules.append(
            {
                "members": list(members),
                "reasons": list(reasons),
                "action": action,
                "max_restarts": max_restarts,
            }
        )
        return self

    def with_failure(self, **fields: Any) -> GroupBuilder:
        self.doc.setdefault("failure", {}).update(fields)
        return self

    def with_placement(self, **fields: Any) -> GroupBuilder:
        self.doc.setdefault("placement", {}).update(fields)
        return self

    def with_barrier(self, timeout: str) -> GroupBuilder:
        self.doc["barrier"] = {"timeout": timeout}
        return self

    def with_success(self, when: str, members: tuple[str, ...] = ()) -> GroupBuilder:
        self.doc["success"] = {"when": when, "members": list(members)}
        return self

    def build(self) -> GroupSpec:
        return spec_from_object(self.doc)


def a_group(name: str = "g1", owner: str = "alice") -> GroupBuilder:
    return GroupBuilder(name, owner)


class ManualClock:
    def __init__(self, start_ns: int = 0) -> None:
        self.now_ns = start_ns

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, seconds: float) -> int:
        self.now_ns += int(seconds * SECOND_NS)
        return self.now_ns


def new_controller(clock: ManualClock | None = None, **env: str) -> Controller:
    return bootstrap(Settings(cluster=None, env=env), clock=clock or ManualClock())


def apply_all(world: World, events: Iterable[DomainEvent]) -> None:
    """Fold ``events`` into ``world`` in order (a state built by hand, outside a log)."""
    for event in events:
        world.apply(event)


def full_placement(spec: GroupSpec, rack: str = "r1") -> PlaceGroup:
    """Place every task of every member on its own node (desired count)."""
    assignments: dict[str, tuple[Assignment, ...]] = {}
    node = 0
    for member in spec.members:
        tasks = []
        for index in range(member.count):
            node += 1
            tasks.append(Assignment(index, f"{rack}-n{node:03d}"))
        assignments[member.name] = tuple(tasks)
    return PlaceGroup(group=spec.name, assignments=assignments)


def event_names(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


# --- reports as the host sends them (attempt-stamped, per task) ------------------------

USER = Actor.user("alice")
"""The user tests send commands as."""
HOST = Actor.host("test-host")
"""The host controller tests report nodes and claims as."""


def _state(controller: Controller, ref: str) -> MemberState:
    group, member = split_member_ref(ref)
    return controller.world.member_named(controller.group(group), member)


def ready(controller: Controller, ref: str, claim: str) -> list[Any]:
    """Claim ``claim`` of the member's current attempt is READY; the events written."""
    attempt = _state(controller, ref).attempt
    return list(controller.claim_ready(ref, claim, attempt, actor=HOST).events)


def claim_fail(controller: Controller, ref: str, claim: str, reason: str) -> list[Any]:
    attempt = _state(controller, ref).attempt
    return list(controller.claim_failed(ref, claim, attempt, reason, actor=HOST).events)


def start(controller: Controller, ref: str) -> list[Any]:
    """Every agent starts its placed tasks of the member's current attempt."""
    state = _state(controller, ref)
    written: list[Any] = []
    for task in [t for t in state.tasks if t.status == "PLACED" and t.attempt == state.attempt]:
        report = controller.task_started(
            ref, task.index, task.attempt, actor=Actor.agent(task.node)
        )
        written.extend(report.events)
    if not written:
        # Nothing placed to start: say so the way the controller does for a member.
        raise IllegalTransition(f"member {ref}", state.status, "start: no placed task")
    return written


def succeed(controller: Controller, ref: str) -> list[Any]:
    """Every running task of the job exits 0 (the last one succeeds the job)."""
    state = _state(controller, ref)
    written: list[Any] = []
    running = [t for t in state.tasks if t.status == "RUNNING"]
    if not running:
        raise IllegalTransition(f"member {ref}", state.status, "succeed: no running task")
    for task in running:
        report = controller.task_succeeded(
            ref, task.index, task.attempt, actor=Actor.agent(task.node)
        )
        written.extend(report.events)
    return written


def fail(
    controller: Controller,
    ref: str,
    reason: FailureReason,
    exit_code: int | None = None,
    replica: int | None = None,
) -> list[Any]:
    """Task ``replica`` (default: the member's lowest placed task) fails."""
    state = _state(controller, ref)
    if replica is None:
        live = sorted(a.index for a in state.assignments)
        if not live:
            raise IllegalTransition(f"member {ref}", state.status, "fail: no placed task")
        replica = live[0]
    task = state.task(replica)
    if task is None:
        raise DomainError(f"member {ref} has no task {replica}")
    report = controller.task_failed(
        ref, replica, task.attempt, reason, exit_code=exit_code, actor=Actor.agent(task.node)
    )
    return list(report.events)


def running_controller(spec: GroupSpec) -> Controller:
    """A controller whose group ``spec`` is RUNNING: placed whole, every claim READY,
    every member started."""
    c = new_controller()
    c.submit(spec)
    c.apply_decisions([full_placement(spec)])
    for member in spec.members:
        for claim in member.claims:
            ready(c, f"{spec.name}/{member.name}", claim)
    for member in spec.members:
        start(c, f"{spec.name}/{member.name}")
    assert c.group(spec.name).status == "RUNNING"
    return c
