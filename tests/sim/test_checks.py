"""The incremental checks after each step catch a violation in the step that brought it,
and name it exactly as the full `check_world` over the whole World does.

Each test corrupts the World in the middle of a real run, in one step, the way events
would (noting the touched member or group to the checker as the engine does), and
expects that step's check to raise what the full check raises.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain.errors import InvariantViolation
from costart.domain.events import Assignment
from costart.domain.invariants import check_world
from costart.domain.states import GroupState, MemberState
from costart.sim.checks import StepChecker
from costart.sim.engine import Engine
from costart.sim.errors import SimError
from costart.sim.ports import key_of
from costart.sim.results import embedder_for
from tests.sim.helpers import setup_of

# Applies a corruption to one member of a group if it can; returns whether it did.
Corruption = Callable[[Engine, GroupState, MemberState], bool]


class CorruptingEngine(Engine):
    """Applies ``corruption`` in the first step after ``from_step`` where it can."""

    corruption: Corruption
    from_step: int
    corrupted_at: int | None = None

    def _after_step(self) -> None:
        if self.corrupted_at is None and self.counters.steps + 1 >= self.from_step:
            world = self.controller.world
            for group in world.live_groups():
                if any(self.corruption(self, group, m) for m in world.members_of(group)):
                    self.corrupted_at = self.counters.steps + 1
                    break
        super()._after_step()


def member_noted(engine: Engine, group: GroupState, member: MemberState) -> None:
    engine.checker.member_changed(key_of(group.id), key_of(member.id), member)


def same_node_overcommit(engine: Engine, group: GroupState, member: MemberState) -> bool:
    """More tasks of the member on a node it already uses: just enough to overcommit it
    counting every holder (the node set of the member does not change)."""
    shape = member.spec.shape
    placed = member.assignments or member.held
    if not placed or not (shape.gpu or shape.cpu or shape.mem_gb):
        return False
    node = placed[0].node
    cap = engine.capacities[node]
    used = [0, 0, 0]
    world = engine.controller.world
    for g in world.live_groups():
        for m in world.members_of(g):
            n = sum(a.node == node for a in (*m.held, *m.assignments))
            s = m.spec.shape
            used = [used[0] + n * s.gpu, used[1] + n * s.cpu, used[2] + n * s.mem_gb]
    while used[0] <= cap.gpu and used[1] <= cap.cpu and used[2] <= cap.mem_gb:
        placed.append(placed[0])
        used = [used[0] + shape.gpu, used[1] + shape.cpu, used[2] + shape.mem_gb]
    member_noted(engine, group, member)
    return True


def unknown_node(engine: Engine, group: GroupState, member: MemberState) -> bool:
    if not member.assignments:
        return False
    member.assignments.append(Assignment(index=999, node="no-such-node"))
    member_noted(engine, group, member)
    return True


def running_before_the_barrier(engine: Engine, group: GroupState, member: MemberState) -> bool:
    if group.status not in ("PENDING", "RESERVING", "PLACED"):
        return False
    member.status = "RUNNING"
    member_noted(engine, group, member)
    return True


def over_budget(engine: Engine, group: GroupState, member: MemberState) -> bool:
    group.group_restarts = group.spec.failure.max_group_restarts + 1
    engine.checker.group_touched(key_of(group.id))
    return True


def leaked_hold(engine: Engine, group: GroupState, member: MemberState) -> bool:
    if group.status != "PENDING":
        return False
    member.held.append(Assignment(index=0, node=sorted(engine.capacities)[0]))
    member_noted(engine, group, member)
    return True


@pytest.mark.parametrize(
    "corruption",
    [same_node_overcommit, unknown_node, running_before_the_barrier, over_budget, leaked_hold],
)
@pytest.mark.parametrize("from_step", [20, 300, 800])
def test_a_violation_is_caught_in_its_step_as_the_full_check_names_it(corruption, from_step):
    setup = setup_of("mixed")
    engine = CorruptingEngine(setup, embedder_for("reserve", setup), controller_factory)
    engine.corruption = corruption
    engine.from_step = from_step
    with pytest.raises(InvariantViolation) as caught:
        engine.run()
    assert engine.corrupted_at is not None
    assert engine.counters.steps == engine.corrupted_at
    with pytest.raises(InvariantViolation) as full:
        check_world(engine.controller.world, engine.capacities)
    assert str(caught.value) == str(full.value)


class Stop(Exception):
    pass


def stop(engine: Engine, group: GroupState, member: MemberState) -> bool:
    raise Stop


def test_the_full_check_recounts_the_nodes_running_totals():
    setup = setup_of("mixed")
    engine = CorruptingEngine(setup, embedder_for("reserve", setup), controller_factory)
    engine.corruption = stop
    engine.from_step = 300
    with pytest.raises(Stop):
        engine.run()
    world = engine.controller.world
    assert any(m.held or m.assignments for m in world.members.values())
    engine.checker.check_all(world)  # the run's totals agree with the World's
    missing_all = StepChecker(engine.capacities)
    with pytest.raises(SimError, match="running totals"):
        missing_all.check_all(world)
