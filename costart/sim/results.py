"""One policy's figures after a run, and running several policies over one setup.

Everything here is derived from virtual time and the log, never from the wall clock, so
the report is the same for the same seed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable

import msgspec

from costart.domain.states import MemberState
from costart.eventlog.event_reading import log_records
from costart.sim.breakdown import NS_PER_SECOND, WorkloadFigures, by_workload, figures_of
from costart.sim.embedder import Embedder
from costart.sim.engine import Engine
from costart.sim.independent import IndependentEmbedder
from costart.sim.metrics import Original, Sample
from costart.sim.peers import (
    KueueEmbedder,
    SlurmEasyEmbedder,
    VolcanoEmbedder,
    VolcanoSlaEmbedder,
    YuniKornEmbedder,
)
from costart.sim.pooled import pooled_fields
from costart.sim.ports import ControllerFactory, SimController
from costart.sim.recommended_policy import RECOMMENDED_POLICY, RecommendedEmbedder
from costart.sim.setup import SimSetup

POLICIES = ("atomic", "reserve", "independent")
# Reservations that lend what they hold to work that is gone before they need it (ADR
# 0045); beside `POLICIES`, whose recorded log digests it has none of.
BACKFILL_POLICY = "reserve-backfill"
# Reservations planned ahead in time from declared limits (ADR 0108); no recorded digests.
PLAN_AHEAD_POLICY = "plan-ahead"
# Peers' policies as the simulator models them (`costart.sim.peers`), compared with
# costart's on the same workload.
PEER_POLICIES = ("volcano", "volcano-sla", "yunikorn", "kueue", "slurm-easy")
ALL_POLICIES = (
    *POLICIES[:2],
    BACKFILL_POLICY,
    PLAN_AHEAD_POLICY,
    *POLICIES[2:],
    *PEER_POLICIES,
)


class PolicyResult(msgspec.Struct, frozen=True):
    """The figures of one policy (times in seconds, GPU use in GPU-hours), pooled over
    every workload (``workloads`` has them per workload). Times to start include the
    ``censored_waits`` groups that never started, at their wait until the run ended (a
    lower bound); groups that would have arrived after the run ended are left out and
    counted in ``after_horizon``. Wasted GPU-hours = idle-held + partial-start waste +
    thrown away (busy work of runs that did not lead to success, `costart.sim.metrics`)."""

    policy: str
    groups: int
    rejected: int
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
    idle_held_gpu_hours: float
    partial_start_waste_gpu_hours: float
    busy_gpu_hours: float
    capacity_gpu_hours: float
    utilization: float
    invariant_checks: int
    events_audited: int
    restore_checks: int
    controller_restarts: int
    node_losses: int
    thrown_away_gpu_hours: float
    wasted_gpu_hours: float
    restarts: int
    preemptions: int
    limit_kills: int
    after_horizon: int
    censored_waits: int
    sessions: int
    steps: int
    log_events: int
    log_sha256: str
    end_s: float
    end_reason: str
    deadlocked_groups: list[str] = msgspec.field(default_factory=list)
    timeline: list[Sample] = msgspec.field(default_factory=list)
    workloads: list[WorkloadFigures] = msgspec.field(default_factory=list)
    # The host's other work (the outside-load allocator): pieces placed, pieces the host
    # could not place, binds another scheduler raced (took the room first), sessions
    # planned again after a refused bind, sessions that decided nothing after
    # `MAX_REPLANS` refusals in a row.
    allocator: str = "in-memory"
    outside_work: int = 0
    outside_dropped: int = 0
    binds_raced: int = 0
    replans: int = 0
    sessions_given_up: int = 0


def log_digest(controller: SimController) -> tuple[int, str]:
    """(events, sha256 over every stored event's topic and state bytes, in log order)."""
    digest = hashlib.sha256()
    count = 0
    for record in log_records(controller.recorder):
        digest.update(record.topic.encode())
        digest.update(record.state)
        count += 1
    return count, digest.hexdigest()


def holds_accelerators(members: Iterable[MemberState]) -> bool:
    """Does any of these members hold or use accelerators now?"""
    return any(m.spec.shape.gpu and (m.held or m.assignments) for m in members)


def holding_originals(engine: Engine, embedder: Embedder) -> set[int]:
    """Indexes of original groups whose live units hold or use accelerators now."""
    world = engine.controller.world
    return {
        unit.original.index
        for unit in embedder.units.values()
        if not world.groups[unit.key].is_terminal
        and holds_accelerators(world.members[key] for key in unit.member_keys.values())
    }


def deadlocked_of(originals: Iterable[Original], holding: set[int]) -> list[str]:
    """The groups deadlocked at the end: never started, not ended, and holding
    accelerators (``holding``: the indexes of the originals that do)."""
    return [
        o.name
        for o in originals
        if o.started_ns is None and o.outcome is None and o.index in holding
    ]


def result_of(engine: Engine, embedder: Embedder) -> PolicyResult:
    originals = embedder.originals
    deadlocked = deadlocked_of(originals, holding_originals(engine, embedder))
    usage = engine.usage
    end_ns = engine.now_ns
    for original in originals:
        usage.settle(original)
    capacity_ns = usage.capacity_gpus * (end_ns - engine.options.start_ns)
    events, digest = log_digest(engine.controller)
    pooled = figures_of("pooled", originals, end_ns)
    c = engine.counters
    return PolicyResult(
        **pooled_fields(pooled, originals, usage, capacity_ns, len(deadlocked)),
        policy=embedder.policy,
        rejected=pooled.rejected,
        invariant_checks=c.world_checks,
        events_audited=c.events_audited,
        restore_checks=c.restore_checks,
        controller_restarts=c.controller_restarts,
        node_losses=c.node_losses,
        after_horizon=pooled.after_horizon,
        sessions=c.sessions,
        steps=c.steps,
        log_events=events,
        log_sha256=digest,
        end_s=round((end_ns - engine.options.start_ns) / NS_PER_SECOND, 3),
        end_reason=engine.end_reason,
        deadlocked_groups=deadlocked[:50],
        timeline=usage.timeline,
        workloads=by_workload(originals, end_ns),
        allocator=engine.options.allocator,
        outside_work=engine.outside.placed if engine.outside is not None else 0,
        outside_dropped=engine.outside.dropped if engine.outside is not None else 0,
        binds_raced=engine.outside.races if engine.outside is not None else 0,
        replans=c.replans,
        sessions_given_up=c.gave_up,
    )


_PEERS: dict[str, Callable[[SimSetup], Embedder]] = {
    "volcano": VolcanoEmbedder,
    "volcano-sla": VolcanoSlaEmbedder,
    "yunikorn": YuniKornEmbedder,
    "kueue": KueueEmbedder,
    "slurm-easy": SlurmEasyEmbedder,
}


def embedder_for(policy: str, setup: SimSetup) -> Embedder:
    if policy == "independent":
        return IndependentEmbedder(setup)
    if policy == "atomic":
        return Embedder(setup, "atomic")
    if policy == "reserve":
        return Embedder(setup, "reserve")
    if policy == BACKFILL_POLICY:
        return Embedder(setup, "reserve-backfill")
    if policy == PLAN_AHEAD_POLICY:
        return Embedder(setup, "plan-ahead")
    if policy == "as-specified":
        return Embedder(setup, None)
    if policy == RECOMMENDED_POLICY:
        return RecommendedEmbedder(setup)
    peer = _PEERS.get(policy)
    if peer is not None:
        return peer(setup)
    known = ", ".join((*ALL_POLICIES, "as-specified", RECOMMENDED_POLICY))
    raise ValueError(f"unknown policy {policy!r} ({known})")


def run_policy(
    setup: SimSetup,
    policy: str,
    factory: ControllerFactory,
    progress: Callable[[Engine], None] | None = None,
) -> tuple[PolicyResult, Engine]:
    """Run one policy; returns its figures and the engine (for its controller's log)."""
    embedder = embedder_for(policy, setup)
    engine = Engine(setup, embedder, factory, progress=progress)
    engine.run()
    return result_of(engine, embedder), engine
