"""`replay verify`: the log, the snapshots and the rebuilt state agree, byte for byte.

Walks the log once, folding every event from scratch (an event that breaks the state
machine is a divergence too); at each snapshot position compares the canonical encoding
of the rebuilt state with the stored snapshot (a snapshot of an older schema: its decoded
state, encoded again, with what that schema records of the rebuilt one) and, on a
mismatch, names the first differing field. Store-level integrity (checksums and the hash chain) is checked first
when the store offers it.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from costart.domain.errors import DomainError
from costart.domain.world import World
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, encode_state, recorded_form
from costart.eventlog.snapshots import CorruptSnapshotError, SnapshotStore, encode_world
from costart.replay.diff import diff_worlds
from costart.replay.source import ReplaySource


class Divergence(msgspec.Struct, frozen=True):
    position: int
    aggregate: str
    field: str
    detail: str


class RebuildCheck(msgspec.Struct):
    """What replaying the log from scratch found: events folded, snapshots compared, and
    the first divergence (none: the log, the snapshots and the rebuilt state agree)."""

    events: int = 0
    snapshots_checked: int = 0
    divergence: Divergence | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None


def verify(
    source: ReplaySource,
    snapshots: SnapshotStore | None = None,
    integrity_check: Callable[[], None] | None = None,
    progress: Callable[[int], None] | None = None,
    log_hash_at: Callable[[int], bytes] | None = None,
) -> RebuildCheck:
    """Rebuild from scratch and compare at every snapshot; stop at the first divergence."""
    report = RebuildCheck()
    if integrity_check is not None:
        try:
            integrity_check()
        except Exception as error:  # the store names the position in its message
            position = int(getattr(error, "position", 0) or 0)
            report.divergence = Divergence(position, "log", "record", str(error))
            return report
    pending = sorted(snapshots.positions()) if snapshots is not None else []
    world = World()
    for position, event in source.read_events():
        try:
            world.apply(event)
        except DomainError as error:
            report.divergence = Divergence(position, type(event).__name__, "transition", str(error))
            return report
        world.position = position
        report.events += 1
        if progress is not None and report.events % 10_000 == 0:
            progress(report.events)
        while pending and pending[0] == position:
            pending.pop(0)
            report.snapshots_checked += 1
            divergence = _compare(world, snapshots, position, log_hash_at) if snapshots else None
            if divergence is not None:
                report.divergence = divergence
                return report
    if pending:
        report.divergence = Divergence(
            pending[0], "snapshot", "position", "a snapshot lies beyond the end of the log"
        )
    return report


def _compare(
    world: World,
    snapshots: SnapshotStore,
    position: int,
    log_hash_at: Callable[[int], bytes] | None,
) -> Divergence | None:
    try:
        snapshot = snapshots.read(position)
        stored = snapshot.world()
    except CorruptSnapshotError as error:
        return Divergence(position, "snapshot", "checksum", str(error))
    tied = log_hash_at is None or snapshot.log_hash is None
    if not tied and snapshot.log_hash != log_hash_at(position):  # type: ignore[misc]
        # Taken from another log (or the log was rewritten since): not this history.
        return Divergence(position, "snapshot", "log_hash", "not tied to this log's hash chain")
    if snapshot.schema == SNAPSHOT_SCHEMA:
        if encode_state(world) == snapshot.state:
            return None
    elif encode_world(stored) == recorded_form(world, snapshot.schema):
        return None  # an older schema's bytes: compared as this release reads them
    changes = diff_worlds(stored, world, limit=1)
    if changes:
        first = changes[0]
        return Divergence(
            position,
            first.aggregate,
            first.field,
            f"snapshot {first.before!r} != replay {first.after!r}",
        )
    return Divergence(position, "world", "(encoding)", "same values, different bytes")
