"""Restoring the controller state: the newest valid snapshot plus the log's tail.

What a restarting or promoted Controller starts from, and the fold every rebuild of the
state shares (`costart.replay` rebuilds to a position or a time with it).
"""

from __future__ import annotations

from collections.abc import Iterator

from costart.domain.events import DomainEvent
from costart.domain.world import World
from costart.eventlog.codec import gc_paused
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.snapshots import CorruptSnapshotError, Snapshot, SnapshotStore


def fold(world: World, events: Iterator[tuple[int, DomainEvent]]) -> World:
    """``world`` with ``events`` applied in order, its position the last one's."""
    # A World being rebuilt has no journal yet: no need to look for one per event.
    apply = world.apply if world.journal_started() else world.apply_unjournaled
    with gc_paused():
        for position, event in events:
            apply(event)
            world.position = position
    return world


def restore(
    snapshots: SnapshotStore, source: RecorderSource
) -> tuple[World, Snapshot | None, list[CorruptSnapshotError]]:
    """Newest valid snapshot (skipping corrupt ones) plus the log's tail: the state a
    restarting or promoted controller starts from."""
    snapshot, world, skipped = snapshots.newest_valid()
    return (
        fold(world or World(), source.read_events(after=world.position if world else 0)),
        snapshot,
        skipped,
    )
