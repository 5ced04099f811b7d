"""One simulation run drawn from a seed: options, workload and fault plan.

Everything that can be drawn up front is drawn here, from one `random.Random(seed)` in a
fixed order (workloads in file order, arrivals in time order, members in spec order, then
faults). What depends on how the run unfolds (claim delays per placement, crashes per
start) is drawn by the engine from streams keyed by seed and name (`keyed_random`), so it
never depends on the order in which things happened, on the policy, or on a controller
restart.
"""

from __future__ import annotations

import random

import msgspec

from costart.display import duration
from costart.domain.actors import Actor
from costart.domain.durations import parse_duration_ns
from costart.domain.events import NodeStatus
from costart.placement.cluster_file import ClusterDefinition
from costart.sim.distributions import describe
from costart.sim.scenario import Scenario, ScenarioRunDoc, WorkloadDoc
from costart.sim.workload import (
    Arrival,
    MemberBehaviour,
    MemberRun,
    OutsidePlan,
    Workload,
)

HOUR_NS = 3600 * 10**9


class SimOptions(msgspec.Struct, frozen=True):
    """The knobs of one run (printed at the start, stored in the report)."""

    seed: int
    session_interval_ns: int = 10 * 10**9
    horizon_ns: int = 24 * HOUR_NS
    task_skew_ns: int = 30 * 10**9
    snapshot_every: int = 1000
    # The placement step's allocator: "in-memory" (costart's own capacity) or
    # "outside-load" (the host's, with other work and races; `costart.sim.outside_load`).
    allocator: str = "in-memory"
    # The virtual clock's start, and the origin of the session grid (a re-run of a
    # recorded log starts at the log's first time, `costart.replay.whatif`).
    start_ns: int = 0
    # No session before this time (None: one interval after the start, less 1 ns, as
    # every drawn run has it); a re-run sets its log's first session time.
    first_session_ns: int | None = None


class NodeLoss(msgspec.Struct, frozen=True):
    """Take a node down at ``at_ns`` for ``down_for_ns``. The node is chosen when the
    fault fires: ``pick`` (0..1) indexes the nodes then running work, by name."""

    at_ns: int
    pick: float
    down_for_ns: int


class ControllerCrash(msgspec.Struct, frozen=True):
    """The controller dies at ``at_ns`` and is restored ``down_for_ns`` later (0: at once)."""

    at_ns: int
    down_for_ns: int = 0


class NodeChange(msgspec.Struct, frozen=True):
    """A node reported ``status`` at ``at_ns`` by ``actor``, as a log recorded it
    (unlike `NodeLoss`, the node is named, not picked)."""

    at_ns: int
    node: str
    status: NodeStatus
    actor: Actor


class FaultPlan(msgspec.Struct, frozen=True):
    node_losses: tuple[NodeLoss, ...] = ()
    crashes: tuple[ControllerCrash, ...] = ()
    node_changes: tuple[NodeChange, ...] = ()


class SimSetup(msgspec.Struct, frozen=True):
    """Everything one run needs, all plain data."""

    name: str
    options: SimOptions
    cluster: ClusterDefinition
    workload: Workload
    faults: FaultPlan = FaultPlan()
    outside: OutsidePlan | None = None  # the host's other work (the outside-load allocator)


def keyed_random(seed: int, *key: object) -> random.Random:
    """A stream of its own for one (seed, key): seeded from text, which `random` hashes
    with SHA-512 — the same in every process, whatever ``PYTHONHASHSEED`` is."""
    return random.Random("/".join(str(k) for k in (seed, *key)))


def _arrival_times(rng: random.Random, doc: WorkloadDoc) -> list[int]:
    start = parse_duration_ns(doc.arrivals.start)
    times = []
    at = start
    for k in range(doc.arrivals.count):
        if doc.arrivals.every is not None:
            at = start + k * parse_duration_ns(doc.arrivals.every)
        else:
            rate = doc.arrivals.rate_per_hour or 1.0
            at += int(rng.expovariate(rate) * HOUR_NS)
        times.append(at)
    return times


def _behaviour(doc: WorkloadDoc, run: ScenarioRunDoc) -> MemberBehaviour:
    return MemberBehaviour(
        claim_delay=run.claim_delay if run.claim_delay is not None else doc.claim_delay,
        claim_fail=run.claim_fail if run.claim_fail is not None else doc.claim_fail,
        fail=run.fail,
        fail_reasons=tuple(run.fail_reasons),
        crash_after=run.crash_after,
    )


def _arrivals(
    rng: random.Random, doc: WorkloadDoc, spec_index: int, scenario: Scenario
) -> list[Arrival]:
    base = scenario.specs[spec_index]
    out = []
    for k, at_ns in enumerate(_arrival_times(rng, doc)):
        spec = msgspec.structs.replace(base, name=f"{doc.name}-{k:03d}")
        runs: dict[str, MemberRun] = {}
        behaviour: dict[str, MemberBehaviour] = {}
        for member in spec.members:
            run = doc.runs.get(member.name, ScenarioRunDoc())
            behaviour[member.name] = _behaviour(doc, run)
            if member.kind == "job":
                runtime = run.runtime.draw_ns(rng) if run.runtime is not None else HOUR_NS
                runs[member.name] = MemberRun(runtime_ns=max(runtime, 10**9))
            else:
                runs[member.name] = MemberRun()
        lifetime = doc.lifetime.draw_ns(rng) if doc.lifetime is not None else None
        out.append(
            Arrival(
                at_ns,
                spec,
                runs,
                behaviour,
                lifetime_ns=lifetime,
                workload=doc.name,
            )
        )
    return out


def draw_setup(scenario: Scenario, seed: int) -> SimSetup:
    """Draw one run of ``scenario`` from ``seed``."""
    doc = scenario.doc
    rng = random.Random(seed)
    arrivals: list[Arrival] = []
    for i, workload in enumerate(doc.workloads):
        arrivals.extend(_arrivals(rng, workload, i, scenario))
    arrivals.sort(key=lambda a: (a.at_ns, a.spec.name))
    losses: list[NodeLoss] = []
    if doc.faults.node_loss is not None:
        spec = doc.faults.node_loss
        for _ in range(spec.count):
            losses.append(NodeLoss(spec.at.draw_ns(rng), rng.random(), spec.down_for.draw_ns(rng)))
    crashes: list[ControllerCrash] = []
    if doc.faults.controller_crash is not None:
        crash = doc.faults.controller_crash
        for _ in range(crash.count):
            crashes.append(ControllerCrash(crash.at.draw_ns(rng), crash.down_for.draw_ns(rng)))
    options = SimOptions(
        seed=seed,
        session_interval_ns=parse_duration_ns(doc.session_interval),
        horizon_ns=parse_duration_ns(doc.horizon),
        task_skew_ns=parse_duration_ns(doc.task_skew),
        snapshot_every=doc.snapshot_every,
    )
    return SimSetup(
        name=doc.name,
        options=options,
        cluster=scenario.cluster,
        workload=Workload(name=doc.name, arrivals=arrivals),
        faults=FaultPlan(
            tuple(sorted(losses, key=lambda f: f.at_ns)),
            tuple(sorted(crashes, key=lambda f: f.at_ns)),
        ),
    )


def describe_setup(setup: SimSetup) -> list[str]:
    """Every option the run drew, one line each (printed so any run can be replayed)."""
    o = setup.options
    lines = [
        f"seed={o.seed}",
        f"scenario={setup.name} session_interval={duration(o.session_interval_ns)} "
        f"horizon={duration(o.horizon_ns)} task_skew={duration(o.task_skew_ns)} "
        f"snapshot_every={o.snapshot_every}",
        f"cluster: {len(setup.cluster.nodes)} nodes, "
        f"{sum(n.gpu for n in setup.cluster.nodes)} GPUs",
        f"arrivals: {len(setup.workload.arrivals)}",
    ]
    for a in setup.workload.arrivals[:50]:
        runs = " ".join(f"{m}={duration(r.runtime_ns)}" for m, r in a.runs.items() if r.runtime_ns)
        claims = sorted({describe(b.claim_delay) for b in a.behaviour.values()})
        life = f" lifetime={duration(a.lifetime_ns)}" if a.lifetime_ns else ""
        lines.append(
            f"  t={duration(a.at_ns - o.start_ns)} {a.spec.name} mode={a.spec.placement.mode} "
            f"{runs}{life} claims~{','.join(claims)}"
        )
    if len(setup.workload.arrivals) > 50:
        lines.append(f"  ... {len(setup.workload.arrivals) - 50} more arrivals")
    for loss in setup.faults.node_losses:
        lines.append(
            f"fault: node loss at t={duration(loss.at_ns)} pick={loss.pick:.4f} "
            f"down_for={duration(loss.down_for_ns)}"
        )
    for change in setup.faults.node_changes:
        lines.append(
            f"node {change.node} {change.status} at t={duration(change.at_ns - o.start_ns)}"
        )
    for crash in setup.faults.crashes:
        lines.append(
            f"fault: controller crash at t={duration(crash.at_ns)} "
            f"down_for={duration(crash.down_for_ns)}"
        )
    if setup.outside is not None:
        lines.append(
            f"allocator={o.allocator}: {len(setup.outside.arrivals)} pieces of other work, "
            f"race={setup.outside.race} race_runtime~{describe(setup.outside.race_runtime)}"
        )
    lines.extend(f"assumption: {text}" for text in setup.workload.assumptions)
    return lines
