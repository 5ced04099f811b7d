"""What the simulator runs: group arrivals, each member's run time and behaviour.

A workload is plain data (msgspec structs) so it can be generated from a seed, imported
from a real trace, printed, and compared between runs. What varies per attempt (claim
delays, whether a start crashes) is given as distributions in `MemberBehaviour` and drawn
by the engine from streams keyed by group, member and attempt, so the draws do not depend
on the order in which things happen.
"""

from __future__ import annotations

import msgspec

from costart.domain.actors import Actor
from costart.domain.spec_types import FailureReason, GroupSpec
from costart.sim.distributions import ZERO, Dist


class MemberRun(msgspec.Struct, frozen=True):
    """How a member behaves once started. ``runtime_ns`` None: a service that runs until
    the group ends; ``fails_after_ns``: it crashes that long after its start (fixed, as
    a trace records it; drawn failures come from `MemberBehaviour`)."""

    runtime_ns: int | None = None
    fails_after_ns: int | None = None
    failure_reason: str = "error"


class MemberBehaviour(msgspec.Struct, frozen=True):
    """The simulated embedding controller's view of one member.

    ``claim_delay``: how long each claim takes to become READY after a placement;
    ``claim_fail``: the probability that a claim FAILs instead. ``fail``: the probability
    that one start crashes — a job at a uniform point of its run time, a service replica
    after ``crash_after`` — with a reason drawn from ``fail_reasons``.
    """

    claim_delay: Dist = ZERO
    claim_fail: float = 0.0
    fail: float = 0.0
    fail_reasons: tuple[FailureReason, ...] = ("error",)
    crash_after: Dist | None = None


DEFAULT_BEHAVIOUR = MemberBehaviour()


class ClaimOutcome(msgspec.Struct, frozen=True):
    """What one claim of one placement did, as a log recorded it: READY (or FAILED,
    ``failed``) ``delay_ns`` after the placement; ``delay_ns`` None: never reported
    while that placement lasted (the report came late or not at all)."""

    delay_ns: int | None
    failed: bool = False


class RunOutcome(msgspec.Struct, frozen=True):
    """How one start of a member ended, as a log recorded it: ``after_ns`` after the
    start, ``reason`` "" for success (every task exited 0), else the failure's reason;
    ``after_ns`` None: it did not end by itself (a service, or a run stopped first
    whose length the workload's assumptions state). ``assumed``: the log does not
    have this run's end; ``after_ns`` is what the assumptions say of it."""

    after_ns: int | None
    reason: str = ""
    assumed: bool = False


class RecordedMember(msgspec.Struct, frozen=True):
    """A member's recorded behaviour, exact per attempt where a log has it (richer
    than `MemberBehaviour`'s distributions): ``claims[k]`` maps each claim to what it
    did after the member's (k+1)-th placement; ``runs[k]`` is how its (k+1)-th start
    ended. Past the recorded ones the arrival's `MemberBehaviour` and `MemberRun` apply."""

    claims: tuple[dict[str, ClaimOutcome], ...] = ()
    runs: tuple[RunOutcome, ...] = ()


class ScaleChange(msgspec.Struct, frozen=True):
    """``member``'s desired replicas set to ``replicas`` at ``at_ns`` by ``actor``."""

    at_ns: int
    member: str
    replicas: int
    actor: Actor


class Arrival(msgspec.Struct, frozen=True):
    """A group submitted at ``at_ns``. ``lifetime_ns``: a group of services only is
    cancelled that long after its start (the trace's deletion time)."""

    at_ns: int
    spec: GroupSpec
    runs: dict[str, MemberRun]
    behaviour: dict[str, MemberBehaviour] = msgspec.field(default_factory=dict)
    lifetime_ns: int | None = None
    workload: str = ""  # the scenario's workload it came from ("" for a trace's)
    # What a log recorded of this group (`costart.replay.whatif`); empty for drawn ones.
    recorded: dict[str, RecordedMember] = msgspec.field(default_factory=dict)
    submitter: Actor | None = None  # who submitted it (None: its owner)
    cancel_at_ns: int | None = None  # cancelled then (unless ended before)
    cancelled_by: Actor | None = None
    scales: tuple[ScaleChange, ...] = ()

    @property
    def workload_name(self) -> str:
        """What the report groups it under: its scenario workload, else its size."""
        return self.workload or size_class(self.spec)

    def behaviour_of(self, member: str) -> MemberBehaviour:
        return self.behaviour.get(member, DEFAULT_BEHAVIOUR)

    def run_of(self, member: str) -> MemberRun:
        return self.runs.get(member, MemberRun())

    def claim_outcome(self, member: str, placement: int, claim: str) -> ClaimOutcome | None:
        """The recorded outcome of ``claim`` after ``member``'s ``placement``-th
        placement (1-based), None when none was recorded."""
        recorded = self.recorded.get(member)
        if recorded is None or placement > len(recorded.claims):
            return None
        return recorded.claims[placement - 1].get(claim)

    def run_outcome(self, member: str, start: int) -> RunOutcome | None:
        """How ``member``'s ``start``-th start (1-based) ended in the log, if recorded."""
        recorded = self.recorded.get(member)
        if recorded is None or start > len(recorded.runs):
            return None
        return recorded.runs[start - 1]


def size_class(spec: GroupSpec) -> str:
    """A trace group's workload in the report, by the accelerators its gang needs (a
    pooled percentile hides how large gangs and small jobs fare apart)."""
    gpus = sum(m.shape.gpu * m.min_start for m in spec.members)
    tasks = sum(m.min_start for m in spec.members)
    if not gpus:
        return "cpu-only"
    if tasks == 1:
        return "single-task"
    return "gang-1-8-gpu" if gpus <= 8 else ("gang-9-64-gpu" if gpus <= 64 else "gang-65+-gpu")


class Workload(msgspec.Struct):
    name: str
    arrivals: list[Arrival]
    assumptions: list[str] = msgspec.field(default_factory=list)


class OutsideWork(msgspec.Struct, frozen=True):
    """One piece of other work: it arrives at ``at_ns`` asking for ``gpus`` GPUs of a
    node (with that node's CPUs and memory per GPU) and runs ``runtime_ns``; the other
    scheduler starts looking at node ``pick`` × the number of nodes."""

    at_ns: int
    gpus: int
    runtime_ns: int
    pick: float


class OutsidePlan(msgspec.Struct, frozen=True):
    """Everything drawn up front for the host's other work."""

    arrivals: tuple[OutsideWork, ...]
    race: float
    race_runtime: Dist
