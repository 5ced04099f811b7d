"""The figures of one log and the fate of each of its groups, as plain data.

They are computed by `costart.replay.outcomes.accounting` (the simulator's own
accounting fed from the log) and compared by `costart.replay.outcomes.compare`. Times
to start are in seconds, accelerator use in GPU-hours, as in `costart sim`'s report; a
wait that never ended inside the log's window is *censored* (counted until the window's
end, a lower bound, ADR 0134).
"""

from __future__ import annotations

import msgspec

from costart.sim.metrics import Sample


class Window(msgspec.Struct, frozen=True):
    """The stretch of controller time the figures cover: capacity is counted over it,
    and a wait still running at ``end_ns`` is censored there."""

    start_ns: int
    end_ns: int

    @property
    def span_ns(self) -> int:
        return self.end_ns - self.start_ns


class GroupFate(msgspec.Struct, frozen=True):
    """What happened to one submitted group. ``occurrence`` tells apart groups submitted
    again under a name that had ended (1 for the first). ``end`` is how it ended
    (succeeded, failed, cancelled) or, still live at the window's end, what it was doing
    then (running, waiting, deadlocked). ``wait_s`` is its time to start, or when it never
    started its wait until the window's end (``censored``)."""

    name: str
    occurrence: int
    submitted_ns: int
    started_ns: int | None
    ended_ns: int | None
    end: str
    wait_s: float
    censored: bool
    idle_held_gpu_hours: float
    partial_start_waste_gpu_hours: float
    thrown_away_gpu_hours: float
    wasted_gpu_hours: float
    busy_gpu_hours: float
    restarts: int
    partial_start: bool

    @property
    def label(self) -> str:
        """The group's name, with ``#N`` for a later group of the same name."""
        return self.name if self.occurrence == 1 else f"{self.name}#{self.occurrence}"

    @property
    def started(self) -> bool:
        return self.started_ns is not None


class LogFigures(msgspec.Struct, frozen=True):
    """One log's figures over its `Window` (named by ``label``: "actual", "what-if", a
    policy). Pooled over every group; ``fates`` has each group in submission order.

    ``last_event_ns``: the last event read; a window that ends later carries the state
    as it was then (a run that went quiet, ADR 0134).

    Wasted GPU-hours = idle-held + partial-start waste + thrown away (`costart.sim.metrics`
    defines each); utilization = busy GPU-hours / (capacity GPUs x the window)."""

    label: str
    window: Window
    capacity_gpus: int
    events: int
    last_event_ns: int
    groups: int
    started: int
    never_started: int
    succeeded: int
    failed: int
    cancelled: int
    partial_starts: int
    deadlocked: int
    time_to_start_p50_s: float | None
    time_to_start_p90_s: float | None
    time_to_start_p99_s: float | None
    time_to_start_max_s: float | None
    censored_waits: int
    idle_held_gpu_hours: float
    partial_start_waste_gpu_hours: float
    thrown_away_gpu_hours: float
    wasted_gpu_hours: float
    busy_gpu_hours: float
    capacity_gpu_hours: float
    utilization: float
    restarts: int
    preemptions: int
    limit_kills: int
    deadlocked_groups: list[str] = msgspec.field(default_factory=list)
    fates: list[GroupFate] = msgspec.field(default_factory=list)
    timeline: list[Sample] = msgspec.field(default_factory=list)
