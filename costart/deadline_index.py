"""`DeadlineIndex`: the groups a timer tick fires for, kept from the committed events.

A speed-up that keeps state (ADR 0062), walled off beside the plain scan it answers for,
`costart.domain.scheduling.due_groups`, which reads every live group on every tick and
which the tests compare this with. A tick comes once per scheduling session, and most
live groups have no deadline that can be due: the scan's reads of them were a share of
a simulation's time worth removing (ADR 0062 has the figure).

The index keeps, per live group with a timer, the time from which the group is due
(`scheduling.wake_ns`). That time depends only on the group's own state (status,
deadlines, first start, spec), which only the group's own events change: `committed`
notes the groups those events name, and the next `due` reads just those again. A tick
then costs a C-level minimum over the kept times, and a Python call only per group due.

Never a list that misses a group: the index vouches for a World only at the log
position it was last told of. A World object it has not read before (a restored
controller's), or one at another position (folds not handed here, a fold that raised
halfway), is read whole again.
"""

from __future__ import annotations

from collections.abc import Sequence

from costart.domain import events as ev
from costart.domain import scheduling
from costart.domain.events import DomainEvent
from costart.domain.ids import id_text
from costart.domain.states import GroupState
from costart.domain.world import World

# The events that change a group's own state (and so when it is due): the group's
# stream, not its members' nor the cluster's.
_GROUP_EVENTS: frozenset[type[DomainEvent]] = frozenset(ev.GROUP_EVENTS)


class DeadlineIndex:
    """When each live group with a timer is due, for the World last read, kept current
    from `committed` (see the module)."""

    __slots__ = ("_changed", "_position", "_wakes", "_world", "rebuilds")

    def __init__(self) -> None:
        self._world: World | None = None
        self._position: int | None = None  # the log position after the last noted events
        self._wakes: dict[str, int] = {}  # live group key -> time from which it is due
        self._changed: set[str] = set()  # groups whose events came since the last read
        self.rebuilds = 0  # how often a World was read whole (tests count the paths)

    def committed(self, events: Sequence[DomainEvent], position: int) -> None:
        """``events`` were folded into the World, which is now at log ``position``."""
        changed, group_events = self._changed, _GROUP_EVENTS
        for event in events:
            if type(event) in group_events:
                changed.add(id_text(event.originator_id))
        self._position = position

    def due(self, world: World, now_ns: int) -> list[GroupState]:
        """What `scheduling.due_groups` answers for ``world`` at ``now_ns``: the live
        groups a tick fires timers for, in submission order."""
        if world is not self._world or world.position != self._position:
            self._read_whole(world)
        elif self._changed:
            self._read_changed(world)
        wakes = self._wakes
        if not wakes or min(wakes.values()) > now_ns:
            return []
        groups = world.groups
        due = [groups[key] for key, wake in wakes.items() if wake <= now_ns]
        due.sort(key=scheduling.submission_order)
        return due

    def _read_whole(self, world: World) -> None:
        groups, wake_ns = world.groups, scheduling.wake_ns
        wakes: dict[str, int] = {}
        for key in world.live_names.values():
            wake = wake_ns(groups[key])
            if wake is not None:
                wakes[key] = wake
        self._wakes = wakes
        self._changed.clear()
        self._world = world
        self._position = world.position
        self.rebuilds += 1

    def _read_changed(self, world: World) -> None:
        groups, wakes, wake_ns = world.groups, self._wakes, scheduling.wake_ns
        # A group leaves the live set only by ending, and an ended group has no wake:
        # no look at the live set is needed.
        for key in self._changed:
            wake = wake_ns(groups[key])
            if wake is None:
                wakes.pop(key, None)
            else:
                wakes[key] = wake
        self._changed.clear()
