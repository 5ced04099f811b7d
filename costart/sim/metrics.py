"""What a run measures, kept incrementally from the events the controller writes.

GPU use is integrated over virtual time in GPU-nanoseconds, split three ways at every
moment:

* idle-held — held by a reservation, or placed and waiting at the start barrier;
* busy — running, and the group it belongs to has fully started;
* partial-start waste — running while the (original) group has not fully started: the
  accelerators a naive start burns waiting for the rest of the group.

Each member's share is recomputed only when an event about it is written, and totals
move by the difference, so accounting costs O(1) per event. The same three integrals are
kept per original group too (settled whenever its counts move, and at the end), so the
report can break them down by workload; summed over the groups they are the totals.
"""

from __future__ import annotations

import msgspec

from costart.domain.states import MemberState

NS_PER_HOUR = 3600 * 10**9


class Original:
    """An arrival as the user submitted it. Under costart policies it is one controller
    group; under ``independent`` it is split into one group per task (its units)."""

    __slots__ = (
        "at_ns",
        "busy_gpu_ns",
        "ended_ns",
        "full_started",
        "idle_gpu_ns",
        "idle_gpus",
        "index",
        "name",
        "outcome",
        "partial",
        "running_gpus",
        "running_units",
        "settled_ns",
        "started_ns",
        "units",
        "waste_gpu_ns",
        "workload",
    )

    def __init__(self, index: int, name: str, at_ns: int, workload: str = "") -> None:
        self.index = index
        self.name = name
        self.at_ns = at_ns
        self.workload = workload
        self.idle_gpus = 0
        self.settled_ns = 0
        self.idle_gpu_ns = 0
        self.busy_gpu_ns = 0
        self.waste_gpu_ns = 0
        self.units = 1
        self.running_units = 0
        self.running_gpus = 0
        self.full_started = False
        self.partial = False
        self.started_ns: int | None = None
        self.ended_ns: int | None = None
        self.outcome: str | None = None


class Sample(msgspec.Struct, frozen=True, array_like=True):
    """One point of the timeline: time, busy GPUs, allocated GPUs, waiting groups."""

    t_ns: int
    busy_gpus: int
    allocated_gpus: int
    waiting: int


class GpuUsage:
    """Current GPU counts and their integrals over virtual time."""

    def __init__(self, capacity_gpus: int) -> None:
        self.capacity_gpus = capacity_gpus
        self.idle_gpus = 0
        self.busy_gpus = 0
        self.waste_gpus = 0
        self.idle_gpu_ns = 0
        self.busy_gpu_ns = 0
        self.waste_gpu_ns = 0
        self.last_ns = 0
        self.waiting = 0
        self._share: dict[str, tuple[int, int]] = {}
        self.timeline: list[Sample] = []

    def advance(self, now_ns: int) -> None:
        """Integrate the current counts up to ``now_ns``."""
        span = now_ns - self.last_ns
        if span > 0:
            self.idle_gpu_ns += self.idle_gpus * span
            self.busy_gpu_ns += self.busy_gpus * span
            self.waste_gpu_ns += self.waste_gpus * span
            self.last_ns = now_ns

    def member_changed(self, key: str, member: MemberState, original: Original) -> None:
        """Re-account one member after an event about it."""
        gpu = member.spec.shape.gpu
        if not gpu:
            return
        status = member.status
        placed = len(member.assignments)
        idle = gpu * len(member.held)
        running = 0
        if status == "RUNNING":
            running = gpu * placed
        elif status in ("PLACED", "READY"):
            idle += gpu * placed
        old_idle, old_running = self._share.get(key, (0, 0))
        if (idle, running) == (old_idle, old_running):
            return
        self.settle(original)
        self._share[key] = (idle, running)
        self.idle_gpus += idle - old_idle
        original.idle_gpus += idle - old_idle
        delta = running - old_running
        original.running_gpus += delta
        if original.full_started:
            self.busy_gpus += delta
        else:
            self.waste_gpus += delta

    def set_full_started(self, original: Original, started: bool) -> None:
        """Move the original's running GPUs between waste and busy."""
        if original.full_started == started:
            return
        self.settle(original)
        original.full_started = started
        sign = 1 if started else -1
        self.busy_gpus += sign * original.running_gpus
        self.waste_gpus -= sign * original.running_gpus

    def settle(self, original: Original) -> None:
        """Integrate ``original``'s own counts up to the usage's time (call before they
        move, and for every group at the end)."""
        span = self.last_ns - original.settled_ns
        if span > 0:
            original.idle_gpu_ns += original.idle_gpus * span
            if original.full_started:
                original.busy_gpu_ns += original.running_gpus * span
            else:
                original.waste_gpu_ns += original.running_gpus * span
            original.settled_ns = self.last_ns

    def sample(self, now_ns: int) -> None:
        allocated = self.idle_gpus + self.busy_gpus + self.waste_gpus
        point = Sample(now_ns, self.busy_gpus, allocated, self.waiting)
        last = self.timeline[-1] if self.timeline else None
        if last is not None and last.t_ns == now_ns:
            self.timeline[-1] = point
        elif last is None or (last.busy_gpus, last.allocated_gpus, last.waiting) != (
            point.busy_gpus,
            point.allocated_gpus,
            point.waiting,
        ):
            self.timeline.append(point)


def percentile(values: list[int], q: float) -> int | None:
    """Nearest-rank percentile of integer values (None when empty): exact and
    deterministic, no float interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(q * 1000) * len(ordered) // 100_000))
    return ordered[min(rank, len(ordered)) - 1]
