"""The fold's creation checks: a member is created only in its own group, with its
group's spec of it, and then shares the group's spec and id objects (ADR 0013)."""

from __future__ import annotations

import msgspec
import pytest

from costart.domain import events as ev
from costart.domain.errors import DomainError
from costart.domain.spec_types import MemberSpec
from costart.domain.world import World
from tests.domain.one_group import GID, MEMBER_IDS, SPEC, submitted


def _created(index: int, **changes: object) -> ev.MemberCreated:
    event = ev.MemberCreated(
        originator_id=MEMBER_IDS[index],
        originator_version=1,
        group_id=GID,
        at_ns=1,
        spec=SPEC.members[index],
    )
    return msgspec.structs.replace(event, **changes)


def test_a_created_member_shares_its_groups_spec_and_ids():
    world = World()
    world.apply(submitted())
    world.apply(_created(1))
    group = world.group_by_id(GID)
    member = world.member_by_id(MEMBER_IDS[1])
    assert member.spec is group.spec.members[1]
    assert member.id is group.member_ids[1]
    assert member.group_id is group.id


def test_a_member_whose_spec_differs_from_its_groups_is_refused():
    world = World()
    world.apply(submitted())
    other = msgspec.structs.replace(SPEC.members[0], count=3)
    with pytest.raises(DomainError, match="differs from its group"):
        world.apply(_created(0, spec=other))
    assert world.members == {}


def test_a_member_under_another_members_id_is_refused():
    world = World()
    world.apply(submitted())
    with pytest.raises(DomainError, match="differs from its group"):
        world.apply(_created(0, originator_id=MEMBER_IDS[1]))


def test_a_member_of_an_unknown_group_or_not_in_its_spec_is_refused():
    world = World()
    with pytest.raises(DomainError, match="unknown group"):
        world.apply(_created(0))
    world.apply(submitted())
    stranger = msgspec.structs.replace(SPEC.members[0], name="zz")
    with pytest.raises(DomainError, match="has no member 'zz'"):
        world.apply(_created(0, spec=stranger))


def test_a_group_whose_member_ids_do_not_match_its_members_is_refused():
    with pytest.raises(DomainError, match="member ids"):
        World().apply(msgspec.structs.replace(submitted(), member_ids=MEMBER_IDS[:1]))


def test_a_member_whose_spec_is_an_equal_copy_of_its_groups_shares_the_groups():
    # Replay decodes each event's spec apart from the group's: equal, not the same object.
    world = World()
    world.apply(submitted())
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(SPEC.members[0]), type=MemberSpec)
    assert copy == SPEC.members[0] and copy is not SPEC.members[0]
    world.apply(_created(0, spec=copy))
    assert world.member_by_id(MEMBER_IDS[0]).spec is world.group_by_id(GID).spec.members[0]
