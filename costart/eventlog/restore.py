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
from costart.eventlog.record_fold import fold_records
from costart.eventlog.snapshots import CorruptSnapshotError, Snapshot, SnapshotStore


def fold(world: World, events: Iterator[tuple[int, DomainEvent]]) -> World:
    """``world`` with ``events`` applied in order, its position the last one's."""
    apply = world.apply
    world.forget_node_use()  # counted once when read, not moved event by event (ADR 0148)
    with gc_paused():
        for position, event in events:
            apply(event)
            world.position = position
    return world


def fold_log(world: World, source: RecorderSource) -> World:
    """``world`` with every event of ``source`` after its position folded in: record by
    record where the store hands over its records (`record_fold`, ADR 0140), else event
    by event (`fold`). The same World either way."""
    found = source.checked_records(world.position)
    if found is None:
        return fold(world, source.read_events(after=world.position))
    records, trusted = found
    return fold_records(world, records, trusted=trusted)


def restore(
    snapshots: SnapshotStore, source: RecorderSource
) -> tuple[World, Snapshot | None, list[CorruptSnapshotError]]:
    """Newest valid snapshot (skipping corrupt ones) plus the log's tail: the state a
    restarting or promoted controller starts from."""
    snapshot, world, skipped = snapshots.newest_valid()
    return fold_log(world or World(), source), snapshot, skipped
