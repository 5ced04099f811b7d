"""The World's change journal: what `World.apply` changed, never encoded or copied, and
bounded so that a reader too far behind is told so instead of being given a partial
list."""

from __future__ import annotations

import msgspec

from costart.domain import events as ev
from costart.domain.ids import id_text
from costart.domain.world import JOURNAL_LIMIT, World
from costart.eventlog.codec import canonical_encode
from tests.domain.one_group import GID, MEMBER_IDS, SPEC, submitted

GKEY, MKEYS = id_text(GID), [id_text(m) for m in MEMBER_IDS]


def _submit(world: World) -> None:
    world.apply(submitted())
    for member_id, spec in zip(MEMBER_IDS, SPEC.members, strict=True):
        world.apply(
            ev.MemberCreated(
                originator_id=member_id, originator_version=1, group_id=GID, at_ns=1, spec=spec
            )
        )


def _cancel(world: World) -> None:
    world.apply(ev.GroupCancelled(originator_id=GID, originator_version=2, group_id=GID, at_ns=2))


def _node_down(world: World) -> None:
    world.apply(
        ev.NodeStatusChanged(
            originator_id=GID,  # the cluster stream's id does not matter to the fold
            originator_version=world.cluster_version + 1,
            group_id=GID,
            at_ns=3,
            node="n1",
            status="down",
        )
    )


def test_the_journal_lists_what_apply_changed_from_its_start() -> None:
    world = World()
    journal = world.changes()
    assert world.changes() is journal
    _submit(world)
    assert journal.since(0) == [GKEY, *MKEYS]
    assert journal.relists == 1  # the live set changed
    mark = journal.end
    _cancel(world)
    assert journal.since(mark) == [GKEY]
    assert journal.relists == 2  # the group left the live set
    mark = journal.end
    _node_down(world)
    assert journal.since(mark) == []  # no group or member changed


def test_changes_before_the_journal_started_are_not_in_it() -> None:
    world = World()
    _submit(world)
    journal = world.changes()
    assert journal.since(0) == [] and journal.end == 0 and journal.relists == 0
    _cancel(world)
    assert journal.since(0) == [GKEY]


def test_the_journal_is_not_state_nor_copied() -> None:
    world, plain = World(), World()
    world.changes()
    _submit(world)
    _submit(plain)
    assert world == plain
    assert canonical_encode(world) == canonical_encode(plain)
    copy = msgspec.structs.replace(world)
    assert copy.changes() is not world.changes()
    assert copy.changes().end == 0


def test_a_reader_behind_the_bound_is_told_so() -> None:
    world = World()
    journal = world.changes()
    _submit(world)
    mark = journal.end
    for _ in range(2 * JOURNAL_LIMIT):
        journal.keys.append(GKEY)  # as if apply had noted that many changes
    _cancel(world)  # the journal is now over twice its bound: the oldest are dropped
    assert journal.base > mark
    assert journal.since(mark) is None
    assert journal.since(journal.base) == journal.keys
    assert len(journal.keys) == JOURNAL_LIMIT


def test_a_pend_reason_change_is_not_listed_and_changes_only_reason_and_version() -> None:
    world = World()
    _submit(world)
    journal = world.changes()
    group = world.group_by_id(GID)
    before = msgspec.structs.asdict(group)
    world.apply(
        ev.PendReasonChanged(
            originator_id=GID,
            originator_version=2,
            group_id=GID,
            at_ns=1,
            reason=ev.PendReason(cls="capacity", message="waiting"),
        )
    )
    assert journal.since(0) == []
    after = msgspec.structs.asdict(group)
    assert {f for f in after if after[f] != before[f]} == {"pend_reason", "version"}
