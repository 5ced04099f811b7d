"""Rebuilding the controller state from the log, to a position or to a time (a restart's
restore is `costart.eventlog.restore`)."""

from __future__ import annotations

from costart.domain.state_copy import copy_world
from costart.domain.world import World
from costart.eventlog.restore import fold, fold_log
from costart.replay.source import RecorderSource, ReplaySource


def rebuild(source: ReplaySource, until: int | None = None, start: World | None = None) -> World:
    """The state at log position ``until`` (the end if None), from scratch or from
    ``start`` (a state at an earlier position, e.g. a snapshot; it is not modified)."""
    world = copy_world(start) if start is not None else World()
    if until is None and isinstance(source, RecorderSource):
        return fold_log(world, source)  # the store's records (ADR 0140)
    return fold(world, source.read_events(after=world.position, until=until))


def rebuild_until_time(source: ReplaySource, at_ns: int) -> World:
    """The state after every event with ``at_ns`` <= the given time."""
    world = World()
    for position, event in source.read_events():
        if event.at_ns > at_ns:
            break
        world.apply(event)
        world.position = position
    return world
