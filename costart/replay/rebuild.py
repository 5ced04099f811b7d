"""Rebuilding the controller state from the log, to a position or to a time."""

from __future__ import annotations

from collections.abc import Iterator

from costart.domain.events import DomainEvent
from costart.domain.world import World
from costart.replay.source import EventSource
from costart.store.codec import canonical_decode, canonical_encode, gc_paused
from costart.store.snapshots import CorruptSnapshotError, Snapshot, SnapshotStore


def fold(world: World, events: Iterator[tuple[int, DomainEvent]]) -> World:
    # A World being rebuilt has no journal yet: no need to look for one per event.
    apply = world.apply if world.journal_started() else world.apply_unjournaled
    with gc_paused():
        for position, event in events:
            apply(event)
            world.position = position
    return world


def rebuild(source: EventSource, until: int | None = None, start: World | None = None) -> World:
    """The state at log position ``until`` (the end if None), from scratch or from
    ``start`` (a state at an earlier position, e.g. a snapshot; it is not modified)."""
    world = copy_world(start) if start is not None else World()
    return fold(world, source.read_events(after=world.position, until=until))


def rebuild_until_time(source: EventSource, at_ns: int) -> World:
    """The state after every event with ``at_ns`` <= the given time."""
    world = World()
    for position, event in source.read_events():
        if event.at_ns > at_ns:
            break
        world.apply(event)
        world.position = position
    return world


def copy_world(world: World) -> World:
    return canonical_decode(canonical_encode(world), World)


def restore(
    snapshots: SnapshotStore, source: EventSource
) -> tuple[World, Snapshot | None, list[CorruptSnapshotError]]:
    """Newest valid snapshot (skipping corrupt ones) plus the log's tail: the state a
    restarting or promoted controller starts from."""
    snapshot, world, skipped = snapshots.newest_valid()
    return (
        fold(world or World(), source.read_events(after=world.position if world else 0)),
        snapshot,
        skipped,
    )
