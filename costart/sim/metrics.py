"""What a run measures, kept incrementally from the events the controller writes.

GPU use is integrated over virtual time in GPU-nanoseconds, split three ways at every
moment:

* idle-held — held by a reservation, or placed and waiting at the start barrier;
* busy — running, and the group it belongs to has fully started;
* partial-start waste — running while the (original) group has not fully started: the
  accelerators a naive start burns waiting for the rest of the group.

Busy time is further judged when a run ends: busy GPU-time of a member run (or of a
replica lost from it) that ends without success — failed, restarted, preempted, stopped at
its run-time limit, or stopped because its group failed — is *thrown away*, and so is a
succeeded run's when its group later restarts or fails (it must run again, or never
counts). A run the user ended (a cancelled group: a service at the end of its lifetime)
is not thrown away, and neither is a replica set's: a service that served and then
lost a replica served meanwhile (nothing is run again). Wasted GPU-time is idle-held +
partial-start waste + thrown away.

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
        "kept_gpu_ns",
        "limit_kills",
        "name",
        "outcome",
        "partial",
        "preemptions",
        "restarts",
        "running_gpus",
        "running_units",
        "runs",
        "settled_ns",
        "started_ns",
        "thrown_gpu_ns",
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
        # Thrown-away accounting: the live member runs (key -> MemberRun), busy GPU-ns of
        # runs that succeeded in the current group attempt (thrown away if the group
        # restarts or fails), thrown-away GPU-ns, and what ended runs without success.
        self.runs: dict[str, MemberRun] = {}
        self.kept_gpu_ns = 0
        self.thrown_gpu_ns = 0
        self.restarts = 0
        self.preemptions = 0
        self.limit_kills = 0


class MemberRun:
    """One member's current run: its running GPUs, the busy GPU-ns it has done so far
    (settled up to ``settled_ns``) and its failed replicas when it started."""

    __slots__ = ("busy_gpu_ns", "failed_replicas", "running_gpus", "settled_ns")

    def __init__(self, now_ns: int, failed_replicas: int) -> None:
        self.running_gpus = 0
        self.busy_gpu_ns = 0
        self.settled_ns = now_ns
        self.failed_replicas = failed_replicas

    def settle(self, now_ns: int, busy: bool) -> None:
        if busy:
            self.busy_gpu_ns += self.running_gpus * (now_ns - self.settled_ns)
        self.settled_ns = now_ns


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
        self.thrown_gpu_ns = 0
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
        if running != old_running and member.spec.kind == "job":
            self._run_changed(key, member, original, old_running, running)
        self._share[key] = (idle, running)
        self.idle_gpus += idle - old_idle
        original.idle_gpus += idle - old_idle
        delta = running - old_running
        original.running_gpus += delta
        if original.full_started:
            self.busy_gpus += delta
        else:
            self.waste_gpus += delta

    def _run_changed(
        self, key: str, member: MemberState, original: Original, old: int, new: int
    ) -> None:
        """A job member's running GPUs moved from ``old`` to ``new``: judge the busy work
        of what stopped running (its share of the run, proportionally). Replica sets are
        not judged: serving is never redone."""
        now = self.last_ns
        run = original.runs.get(key)
        if run is None:
            run = original.runs[key] = MemberRun(now, member.failed_replicas)
        run.settle(now, original.full_started)
        if new < old:
            part = run.busy_gpu_ns * (old - new) // old
            run.busy_gpu_ns -= part
            if _kept(member, original, run):
                original.kept_gpu_ns += part
            else:
                self.throw(original, part)
            run.failed_replicas = member.failed_replicas
        run.running_gpus = new
        if new == 0:
            del original.runs[key]

    def throw(self, original: Original, gpu_ns: int) -> None:
        original.thrown_gpu_ns += gpu_ns
        self.thrown_gpu_ns += gpu_ns

    def attempt_lost(self, original: Original) -> None:
        """The original's group restarts or fails: what its runs achieved in this attempt
        (succeeded members included) must run again, or never counts."""
        self.throw(original, original.kept_gpu_ns)
        original.kept_gpu_ns = 0

    def attempt_kept(self, original: Original) -> None:
        """The original's group ended as its user wanted (succeeded, or cancelled)."""
        original.kept_gpu_ns = 0

    def set_full_started(self, original: Original, started: bool) -> None:
        """Move the original's running GPUs between waste and busy."""
        if original.full_started == started:
            return
        self.settle(original)
        for run in original.runs.values():
            run.settle(self.last_ns, original.full_started)
        original.full_started = started
        sign = 1 if started else -1
        self.busy_gpus += sign * original.running_gpus
        self.waste_gpus -= sign * original.running_gpus

    # --- what the embedding controller's reactions account: one place for the
    # simulator's embedder and for a log read after the fact (`costart.replay.outcomes`).

    def group_started(self, original: Original, now_ns: int) -> bool:
        """The original's start barrier released: its running GPUs count as busy from
        now. True the first time (its time to start ends now)."""
        self.set_full_started(original, True)
        if original.started_ns is not None:
            return False
        original.started_ns = now_ns
        self.waiting -= 1
        return True

    def member_started(self, original: Original) -> None:
        """A member started: before its group fully started, that is a partial start."""
        if not original.full_started:
            original.partial = True  # never under costart: the barrier came first

    def restarted(self, original: Original, *, whole_group: bool) -> None:
        """A member (or the whole group) restarts; a group's restart loses its attempt."""
        original.restarts += 1
        if whole_group:
            self.attempt_lost(original)

    def group_ended(self, original: Original, outcome: str, now_ns: int) -> None:
        """The original's group ended (``outcome``: succeeded, failed or cancelled)."""
        original.ended_ns = now_ns
        original.outcome = outcome
        if outcome == "failed":
            self.attempt_lost(original)
        else:
            self.attempt_kept(original)
        if original.started_ns is None:
            self.waiting -= 1

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


def count_stop(original: Original, reason: str) -> None:
    """Count a member stopped by a reservation or at its declared run-time limit."""
    if reason == "preempted":
        original.preemptions += 1
    elif reason == "max-runtime":
        original.limit_kills += 1


def _kept(member: MemberState, original: Original, run: MemberRun) -> bool:
    """Did the run (or the replicas it lost) end as the user wanted? Succeeded, scaled
    down, or stopped by a cancel of a group that had not failed."""
    status = member.status
    if status == "SUCCEEDED":
        return True
    if status == "RUNNING":
        return member.failed_replicas == run.failed_replicas  # scaled down, none lost
    if status == "STOPPED":
        return member.last_reason == "group cancelled" and original.outcome != "failed"
    return False


def percentile(values: list[int], q: float) -> int | None:
    """Nearest-rank percentile of integer values (None when empty): exact and
    deterministic, no float interpolation."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(q * 1000) * len(ordered) // 100_000))
    return ordered[min(rank, len(ordered)) - 1]
