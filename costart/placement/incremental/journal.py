"""`EventJournal`: what changed in the World, learnt from the events the Controller
committed (`CoPlacementStep.committed`), for the readers that keep numbers current
across sessions (`WorldUsage`, `LastSession`).

Each committed event is noted by the key of the group or member it changed (its
originator's id text), in log order; a pend reason change and a node report are left
out: a pend reason changes only the group's ``pend_reason`` and ``version``, which the
step (whose output the reason is) never reads, and node status reaches the step
through the World's ``node_status``, compared whole every session. The journal also
lists, in order, the keys of the groups whose events may have changed the live set (a
submission adds a group; a group ends only by `GroupSucceeded`, `GroupFailed` or
`GroupCancelled`), so a reader learns which groups came or went without comparing the
World's whole live list (`live_changes_since`; ADR 0057).

The journal vouches for a World only at the log position it was last told of: a reader
asks `since(mark, world)`, which answers None (compare everything) when the World is
at another position — its folds were not all handed here (a test that folds by hand, a
controller that caught up on its own) — or when the reader fell behind the journal's
bound. Never a list that misses a change: a World object the reader did not sync
before (a restored controller's) starts from scratch on the reader's side.
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.domain import events as ev
from costart.domain.events import DomainEvent
from costart.domain.ids import id_text
from costart.domain.world import World

JOURNAL_LIMIT = 4096  # entries kept beyond a trim; a reader further behind compares all
_SKIPPED: frozenset[type[DomainEvent]] = frozenset({ev.PendReasonChanged, ev.NodeStatusChanged})
_RELISTS: frozenset[type[DomainEvent]] = frozenset(
    {ev.GroupSubmitted, ev.GroupSucceeded, ev.GroupFailed, ev.GroupCancelled}
)


class EventJournal:
    """The keys of the groups and members committed events changed, in order, and the
    keys of the groups whose events may have changed the live set (see the module).

    Positions are absolute: entry ``p`` is ``keys[p - base]``, and live change ``r`` is
    ``live_changes[r - live_base]``; ``relists`` counts every live change noted (a
    reader's mark in that list). The oldest entries of either list are dropped once it
    holds more than twice `JOURNAL_LIMIT`."""

    __slots__ = ("base", "keys", "live_base", "live_changes", "position")

    def __init__(self) -> None:
        self.base = 0
        self.keys: list[str] = []
        self.live_base = 0
        self.live_changes: list[str] = []
        self.position: int | None = None  # the log position after the last noted events

    @property
    def relists(self) -> int:
        """How many events that may change the live set were noted, ever."""
        return self.live_base + len(self.live_changes)

    @property
    def end(self) -> int:
        """The position after the last entry: a reader's mark once it has read all."""
        return self.base + len(self.keys)

    def note(self, events: Sequence[DomainEvent], position: int) -> None:
        """``events`` were folded into the World, which is now at log ``position``."""
        keys, key_of, skipped, relists = self.keys, id_text, _SKIPPED, _RELISTS
        for event in events:
            kind = type(event)
            if kind in skipped:
                continue
            key = key_of(event.originator_id)
            keys.append(key)
            if kind in relists:
                self.live_changes.append(key)
        if len(keys) > 2 * JOURNAL_LIMIT:
            self.trim(JOURNAL_LIMIT)
        if len(self.live_changes) > 2 * JOURNAL_LIMIT:
            self.trim_live_changes(JOURNAL_LIMIT)
        self.position = position

    def vouches_for(self, world: World) -> bool:
        """Was every event folded into ``world`` handed to `note` (as far as its log
        position tells)?"""
        return self.position is not None and self.position == world.position

    def since(self, mark: int, world: World) -> list[str] | None:
        """The keys changed after ``mark`` (repeats possible), or None if the journal
        cannot say for ``world`` (see the module)."""
        if mark < self.base or not self.vouches_for(world):
            return None
        return self.keys[mark - self.base :]

    def live_changes_since(self, relists: int) -> list[str] | None:
        """The keys of the groups whose events may have changed the live set after the
        reader's mark ``relists`` (an earlier `relists`), in order (repeats possible),
        or None if the oldest of them were dropped. Vouches for a World only together
        with `since` (it reads the same committed events)."""
        if relists < self.live_base:
            return None
        return self.live_changes[relists - self.live_base :]

    def trim(self, keep: int) -> None:
        """Drop all but the newest ``keep`` entries."""
        drop = max(len(self.keys) - keep, 0)
        del self.keys[:drop]
        self.base += drop

    def trim_live_changes(self, keep: int) -> None:
        """Drop all but the newest ``keep`` live changes."""
        drop = max(len(self.live_changes) - keep, 0)
        del self.live_changes[:drop]
        self.live_base += drop


class JournalCursor:
    """One reader's place in an `EventJournal` (``mark`` in its entries, ``relists`` in
    its live changes) and the World it last read for (``world``): what `WorldUsage` keeps."""

    __slots__ = ("journal", "mark", "relists", "world")

    def __init__(self, journal: EventJournal) -> None:
        self.journal = journal
        self.world: World | None = None
        self.mark = -1  # the journal position read up to
        self.relists = 0  # the journal's live changes read up to

    def read(self, world: World) -> tuple[bool, list[str] | None, list[str] | None]:
        """``(new_world, keys, came_or_went)`` since the previous read, and moves past
        them. ``new_world``: ``world`` is not the World read before, so the reader starts
        from scratch (and ``keys`` is None). ``keys``: what `EventJournal.since` answers;
        ``came_or_went``: what `EventJournal.live_changes_since` answers, None whenever
        ``keys`` is. Either None: compare everything."""
        new_world = world is not self.world
        if new_world:
            self.world = world
            self.mark = -1  # before any entry: the first read compares everything
        journal = self.journal
        keys = journal.since(self.mark, world)
        came_or_went = None if keys is None else journal.live_changes_since(self.relists)
        self.mark = journal.base + len(journal.keys)  # `end`, inlined: every session
        self.relists = journal.relists
        return new_world, keys, came_or_went
