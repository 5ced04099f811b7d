"""`DeadlineIndex` (the groups a tick fires for, kept from the committed events) against
the plain scan it stands in for, `scheduling.due_groups`: directly, on each way a group
comes to be due or stops being due, and on whole simulated runs, where every tick of
the controller is checked against the plain scan at the tick's time and later ones."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import costart.controller
from costart.cli.sim_cmd import controller_factory
from costart.deadline_index import DeadlineIndex
from costart.domain.decisions import HoldCapacity
from costart.domain.scheduling import due_groups
from costart.domain.states import GroupState
from costart.domain.world import World
from costart.sim.results import BACKFILL_POLICY, run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import draw_setup
from tests.builders import (
    USER,
    ManualClock,
    a_group,
    full_placement,
    new_controller,
    ready,
    start,
)

SECOND_NS = 10**9
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def names(groups: list[GroupState]) -> list[str]:
    return [g.name for g in groups]


def agrees(index: DeadlineIndex, world: World, at_ns: int) -> list[str]:
    """The index's answer at ``at_ns``, checked against the plain scan's."""
    answer = names(index.due(world, at_ns))
    assert answer == names(due_groups(world, at_ns)), f"at {at_ns}"
    return answer


def test_each_deadline_is_due_from_its_instant_and_stops_when_the_group_moves_on():
    clock = ManualClock()
    c = new_controller(clock)
    index = c._deadlines  # the controller's own, fed by its commits
    reserving = a_group("reserving").with_member("a").reserve(timeout="15m").build()
    placed = a_group("placed").with_member("a", claims=("gpus",)).atomic()
    placed = placed.with_barrier("10m").build()
    limited = a_group("limited").with_member("a", max_runtime="1h").atomic().build()
    for spec in (reserving, placed, limited):
        c.submit(spec)
    assert agrees(index, c.world, 10**18) == []  # pending groups have no timer
    c.apply_decisions(
        [
            HoldCapacity("reserving", {"a": full_placement(reserving).assignments["a"]}),
            full_placement(placed, rack="r2"),
            full_placement(limited, rack="r3"),
        ]
    )
    start(c, "limited/a")  # no claims: the barrier released on placement
    now = clock()
    assert agrees(index, c.world, now) == []
    assert agrees(index, c.world, now + 10 * 60 * SECOND_NS) == ["placed"]
    assert agrees(index, c.world, now + 15 * 60 * SECOND_NS) == ["reserving", "placed"]
    assert agrees(index, c.world, now + 3600 * SECOND_NS) == ["reserving", "placed", "limited"]
    # The claim comes: the barrier is released and its deadline with it.
    ready(c, "placed/a", "gpus")
    assert agrees(index, c.world, now + 3600 * SECOND_NS) == ["reserving", "limited"]
    # A cancelled group leaves the live set, and the index with it.
    c.cancel("reserving", actor=USER)
    assert agrees(index, c.world, 10**18) == ["limited"]
    # The tick fires the limit: the member fails and the group is no longer due.
    clock.now_ns = now + 3600 * SECOND_NS
    assert c.tick() != []
    assert agrees(index, c.world, 10**18) == names(due_groups(c.world, 10**18))
    assert index.rebuilds == 1  # read whole once (its first World), then only what changed


def test_a_world_it_was_not_told_of_is_read_whole():
    clock = ManualClock()
    c = new_controller(clock)
    index = DeadlineIndex()  # told nothing: the World moves on without it
    spec = a_group("g").with_member("a").reserve(timeout="15m").build()
    assert agrees(index, c.world, 10**18) == []
    c.submit(spec)
    c.apply_decisions([HoldCapacity("g", {"a": full_placement(spec).assignments["a"]})])
    assert agrees(index, c.world, 10**18) == ["g"]  # the position moved: read again
    assert index.rebuilds == 2
    other = World()  # another World object at the same position is read whole too
    other.position = c.world.position
    assert agrees(index, other, 10**18) == []
    assert index.rebuilds == 3


def test_a_restored_controller_fires_the_deadlines_the_crashed_one_held():
    clock = ManualClock()
    first = new_controller(clock)
    spec = a_group("g").with_member("a").reserve(timeout="15m").build()
    first.submit(spec)
    first.apply_decisions([HoldCapacity("g", {"a": full_placement(spec).assignments["a"]})])
    deadline = first.group("g").reservation_deadline_ns
    assert deadline is not None
    again = costart.controller.Controller(env=first.session.env, clock=clock, restart_of=first)
    assert [type(e).__name__ for e in again.tick(deadline)][:1] == ["ReservationTimedOut"]


class _Checked(DeadlineIndex):
    """The controller's index, checked against the plain scan at every tick, at the
    tick's time and at later ones (each group's own due time and the instant before)."""

    tally: Counter[str] = Counter()

    def due(self, world: World, now_ns: int) -> list[GroupState]:
        rebuilds = self.rebuilds
        answer = super().due(world, now_ns)
        plain = due_groups(world, now_ns)
        assert names(answer) == names(plain), f"tick at {now_ns}"
        _Checked.tally["ticks"] += 1
        _Checked.tally["read whole" if self.rebuilds > rebuilds else "read changed or none"] += 1
        _Checked.tally["ticks that fire" if answer else "ticks with none due"] += 1
        for wake in sorted(set(self._wakes.values()))[:8]:
            for at in (wake - 1, wake):
                if at >= now_ns:
                    later = names(super().due(world, at))
                    assert later == names(due_groups(world, at)), f"at {at} (tick at {now_ns})"
                    _Checked.tally["later times checked"] += 1
        return answer


@pytest.mark.parametrize(
    ("scenario", "policy"),
    [
        ("sim-mixed.toml", "reserve"),
        ("sim-deadlock-trap.toml", "reserve"),
        ("sim-starvation-backfill.toml", BACKFILL_POLICY),
    ],
)
def test_every_tick_of_a_simulated_run_fires_what_the_plain_scan_names(
    scenario, policy, monkeypatch
):
    monkeypatch.setattr(costart.controller, "DeadlineIndex", _Checked)
    _Checked.tally.clear()
    setup = draw_setup(load_scenario(SCENARIOS / scenario), 1)
    run_policy(setup, policy, controller_factory)
    tally = _Checked.tally
    print(f"{scenario} {policy}: {dict(sorted(tally.items()))}")
    for path in ("ticks that fire", "read whole", "read changed or none", "later times checked"):
        assert tally[path] > 0, f"no tick took the path {path!r}: {dict(tally)}"
