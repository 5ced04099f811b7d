"""Idle-held accelerators (docs/design.md §4): GPUs a group holds or has placed but does not run.

Two measures, both from the `World` and an injected time:

* `idle_held_gpu_seconds(world, now_ns)` — for each group now waiting with capacity
  (a RESERVING group's holds, a PLACED group's placements at the barrier), GPUs × the time
  since that phase began (reservation opened, group placed). For a reservation whose
  holds accrued over time this is an upper bound.
* `IdleHeldMeter` — integrates the idle-held GPU count exactly at the granularity it is
  observed (each session or tick), for the simulator and reports.

Integer nanoseconds inside; seconds only at the edge.
"""

from __future__ import annotations

from costart.domain.states import GroupState
from costart.domain.world import World

NS_PER_SECOND = 1_000_000_000


def idle_held_gpus_of(world: World, group: GroupState) -> int:
    """GPUs the group holds, or has placed but not started (members not yet RUNNING)."""
    gpus = 0
    for member in world.members_of(group):
        gpu = member.spec.shape.gpu
        gpus += gpu * len(member.held)
        if member.status in ("PLACED", "READY"):
            gpus += gpu * len(member.assignments)
    return gpus


def idle_held_gpus(world: World) -> int:
    """GPUs held or placed without running, over every live group."""
    return sum(idle_held_gpus_of(world, g) for g in world.live_groups())


def _phase_start_ns(group: GroupState) -> int | None:
    if group.status == "RESERVING" and group.reservation_deadline_ns is not None:
        return group.reservation_deadline_ns - group.spec.placement.timeout_ns
    if group.status == "PLACED":
        return group.placed_at_ns
    return None


def held_gpu_ns_by_group(world: World, now_ns: int) -> dict[str, int]:
    """Idle-held GPU-nanoseconds of the current phase, per waiting group name."""
    out: dict[str, int] = {}
    for group in world.live_groups():
        start = _phase_start_ns(group)
        if start is None:
            continue
        gpus = idle_held_gpus_of(world, group)
        if gpus:
            out[group.name] = gpus * max(0, now_ns - start)
    return out


def idle_held_gpu_seconds(world: World, now_ns: int) -> float:
    """Idle-held accelerator-seconds of the groups now waiting with capacity."""
    return sum(held_gpu_ns_by_group(world, now_ns).values()) / NS_PER_SECOND


class IdleHeldMeter:
    """Exact running total of idle-held GPU-nanoseconds, fed with (world, time) readings.

    Between two observations the count seen at the first one is assumed constant, so
    observe after every change (each session and tick) for an exact figure.
    """

    def __init__(self) -> None:
        self.idle_held_gpu_ns = 0
        self._last_ns: int | None = None
        self._last_gpus = 0

    def observe(self, world: World, now_ns: int) -> None:
        if self._last_ns is not None and now_ns > self._last_ns:
            self.idle_held_gpu_ns += self._last_gpus * (now_ns - self._last_ns)
        if self._last_ns is None or now_ns >= self._last_ns:
            self._last_ns = now_ns
        self._last_gpus = idle_held_gpus(world)

    @property
    def idle_held_gpu_seconds(self) -> float:
        return self.idle_held_gpu_ns / NS_PER_SECOND
