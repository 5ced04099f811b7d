"""The incremental step's `EventJournal`: what the committed events changed, learnt from
the events alone (the World carries no journal), vouching for a World only at the log
position it was told of, and bounded so that a reader too far behind is told so instead
of being given a partial list."""

from __future__ import annotations

import msgspec

from costart.domain import events as ev
from costart.domain.ids import id_text
from costart.domain.world import World
from costart.placement.incremental.journal import JOURNAL_LIMIT, EventJournal
from tests.domain.one_group import GID, MEMBER_IDS, SPEC, submitted

GKEY, MKEYS = id_text(GID), [id_text(m) for m in MEMBER_IDS]


def _commit(world: World, journal: EventJournal, events: list[ev.DomainEvent]) -> None:
    """As the Controller does: fold, advance the position, hand the events over."""
    for event in events:
        world.apply(event)
        world.position += 1
    journal.note(events, world.position)


def _submit() -> list[ev.DomainEvent]:
    created: list[ev.DomainEvent] = [
        ev.MemberCreated(
            originator_id=member_id, originator_version=1, group_id=GID, at_ns=1, spec=spec
        )
        for member_id, spec in zip(MEMBER_IDS, SPEC.members, strict=True)
    ]
    return [submitted(), *created]


def _cancel() -> list[ev.DomainEvent]:
    return [ev.GroupCancelled(originator_id=GID, originator_version=2, group_id=GID, at_ns=2)]


def _node_down(world: World) -> list[ev.DomainEvent]:
    return [
        ev.NodeStatusChanged(
            originator_id=GID,  # the cluster stream's id does not matter to the fold
            originator_version=world.cluster_version + 1,
            group_id=GID,
            at_ns=3,
            node="n1",
            status="down",
        )
    ]


def test_the_journal_lists_what_the_committed_events_changed() -> None:
    world, journal = World(), EventJournal()
    _commit(world, journal, _submit())
    assert journal.since(0, world) == [GKEY, *MKEYS]
    assert journal.relists == 1  # the live set changed
    assert journal.live_changes_since(0) == [GKEY]  # by this group
    mark = journal.end
    _commit(world, journal, _cancel())
    assert journal.since(mark, world) == [GKEY]
    assert journal.relists == 2  # the group left the live set
    assert journal.live_changes_since(1) == [GKEY]
    mark = journal.end
    _commit(world, journal, _node_down(world))
    assert journal.since(mark, world) == []  # no group or member changed
    assert journal.live_changes_since(2) == []


def test_the_journal_does_not_vouch_for_a_world_at_another_position() -> None:
    world, journal = World(), EventJournal()
    assert journal.since(0, world) is None  # told of nothing yet
    _commit(world, journal, _submit())
    assert journal.since(0, world) is not None
    for event in _cancel():  # folded without being handed over
        world.apply(event)
        world.position += 1
    assert journal.since(0, world) is None
    journal.note([], world.position)  # told of the position again (nothing missed)
    assert journal.since(0, world) == [GKEY, *MKEYS]


def test_the_world_carries_no_journal() -> None:
    """Beside its fields the World keeps only its use per node (ADR 0148), which its
    folds write: no room for a reader's state."""
    world = World()
    assert set(vars(world)) == {"_node_use"}
    assert not any(name.startswith("_change") for name in World.__struct_fields__)


def test_a_reader_behind_the_bound_is_told_so() -> None:
    world, journal = World(), EventJournal()
    _commit(world, journal, _submit())
    mark = journal.end
    journal.keys.extend([GKEY] * (2 * JOURNAL_LIMIT))  # as if that many were noted
    _commit(world, journal, _cancel())  # now over twice its bound: the oldest are dropped
    assert journal.base > mark
    assert journal.since(mark, world) is None
    assert journal.since(journal.base, world) == journal.keys
    assert len(journal.keys) == JOURNAL_LIMIT


def test_a_pend_reason_change_is_not_listed_and_changes_only_reason_and_version() -> None:
    world, journal = World(), EventJournal()
    _commit(world, journal, _submit())
    mark = journal.end
    group = world.group_by_id(GID)
    before = msgspec.structs.asdict(group)
    reason = ev.PendReason(cls="capacity", message="waiting")
    _commit(
        world,
        journal,
        [
            ev.PendReasonChanged(
                originator_id=GID, originator_version=2, group_id=GID, at_ns=1, reason=reason
            )
        ],
    )
    assert journal.since(mark, world) == []
    after = msgspec.structs.asdict(group)
    assert {f for f in after if after[f] != before[f]} == {"pend_reason", "version"}


def test_a_reader_behind_the_live_changes_bound_is_told_so() -> None:
    world, journal = World(), EventJournal()
    _commit(world, journal, _submit())
    journal.live_changes.extend([GKEY] * (2 * JOURNAL_LIMIT))  # as if that many were noted
    _commit(world, journal, _cancel())  # now over twice its bound: the oldest are dropped
    assert journal.live_base > 1
    assert journal.live_changes_since(1) is None
    assert journal.live_changes_since(journal.live_base) == journal.live_changes
    assert len(journal.live_changes) == JOURNAL_LIMIT
    assert journal.relists == 2 + 2 * JOURNAL_LIMIT  # every live change ever noted
