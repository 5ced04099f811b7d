"""Rule #6: a member's restarts stay within the largest budget of the restart rules that
cover it (0 when none does), and the group's within its group budget."""

from __future__ import annotations

import pytest

from costart.domain.errors import InvariantViolation
from costart.domain.ids import group_id, member_ids
from costart.domain.invariants import check_world
from costart.domain.states import GroupState, MemberState
from costart.domain.world import World
from tests.builders import a_group


def world_with_restarts(spec, restarts: dict[str, int], group_restarts: int = 0) -> World:
    gid = group_id(1, spec.name)
    mids = member_ids(gid, [m.name for m in spec.members])
    group = GroupState(
        id=gid,
        version=1,
        name=spec.name,
        spec=spec,
        submission_seq=1,
        member_ids=tuple(mids),
        group_restarts=group_restarts,
    )
    members = {
        str(mid): MemberState(
            id=mid, version=1, group_id=gid, spec=m, restarts=restarts.get(m.name, 0)
        )
        for m, mid in zip(spec.members, mids, strict=True)
    }
    return World(groups={str(gid): group}, members=members, live_names={spec.name: str(gid)})


RULED = (
    a_group("ruled")
    .with_member("a")
    .with_member("b")
    .with_member("c")
    .with_rule("restart-member", members=("a",), max_restarts=2)
    .with_rule("restart-member", members=("a", "b"), max_restarts=1)
    .with_rule("fail-group", members=("c",), max_restarts=5)
    .build()
)


@pytest.mark.parametrize(
    ("restarts", "over"),
    [
        ({"a": 2, "b": 1}, None),  # a: the larger of its two rules
        ({"a": 3}, "a"),
        ({"b": 2}, "b"),
        ({"c": 1}, "c"),  # only a fail-group rule covers c: budget 0
    ],
)
def test_a_members_budget_is_the_largest_restart_rule_covering_it(restarts, over):
    world = world_with_restarts(RULED, restarts)
    if over is None:
        check_world(world)
        return
    with pytest.raises(InvariantViolation, match="restart budgets") as caught:
        check_world(world)
    assert caught.value.member == over


def test_without_restart_rules_no_member_may_restart():
    spec = a_group("plain").with_member("a").build()
    check_world(world_with_restarts(spec, {}))
    with pytest.raises(InvariantViolation, match=r"1 restarts > 0"):
        check_world(world_with_restarts(spec, {"a": 1}))


def test_a_rule_for_every_member_covers_each():
    spec = (
        a_group("all")
        .with_member("a")
        .with_member("b")
        .with_rule("restart-member", max_restarts=3)
        .build()
    )
    check_world(world_with_restarts(spec, {"a": 3, "b": 3}))
    with pytest.raises(InvariantViolation, match="restart budgets"):
        check_world(world_with_restarts(spec, {"b": 4}))


def test_the_group_budget_holds_too():
    spec = a_group("g").with_member("a").with_failure(max_group_restarts=1).build()
    check_world(world_with_restarts(spec, {}, group_restarts=1))
    with pytest.raises(InvariantViolation, match="group restarts > budget 1"):
        check_world(world_with_restarts(spec, {}, group_restarts=2))
