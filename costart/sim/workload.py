"""What the simulator runs: group arrivals, each member's run time and behaviour.

A workload is plain data (msgspec structs) so it can be generated from a seed, imported
from a real trace, printed, and compared between runs. What varies per attempt (claim
delays, whether a start crashes) is given as distributions in `MemberBehaviour` and drawn
by the engine from streams keyed by group, member and attempt, so the draws do not depend
on the order in which things happen.
"""

from __future__ import annotations

import msgspec

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


class Arrival(msgspec.Struct, frozen=True):
    """A group submitted at ``at_ns``. ``lifetime_ns``: a group of services only is
    cancelled that long after its start (the trace's deletion time)."""

    at_ns: int
    spec: GroupSpec
    runs: dict[str, MemberRun]
    behaviour: dict[str, MemberBehaviour] = msgspec.field(default_factory=dict)
    lifetime_ns: int | None = None
    workload: str = ""  # the scenario's workload it came from ("" for a trace's)

    @property
    def workload_name(self) -> str:
        """What the report groups it under: its scenario workload, else its size."""
        return self.workload or size_class(self.spec)

    def behaviour_of(self, member: str) -> MemberBehaviour:
        return self.behaviour.get(member, DEFAULT_BEHAVIOUR)

    def run_of(self, member: str) -> MemberRun:
        return self.runs.get(member, MemberRun())


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
