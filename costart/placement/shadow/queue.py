"""Every waiting group's expected start, from a World: the shadow plan of the queue.

Pure over (cluster, World, now, free capacity, placement groups): the waiting groups
(PENDING or RESERVING) are planned in the one global order (priority, then submission),
each over what running work and the groups ahead leave it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from costart.domain.spec_types import Topology
from costart.domain.states import GROUP_WAITING, GroupState
from costart.domain.world import World
from costart.placement.capacity import Vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope, resolve_scopes
from costart.placement.holdings import live_in_order
from costart.placement.inputs import gang_demands
from costart.placement.planner import Demand
from costart.placement.shadow.admission import admitted_runtime, claimed_from
from costart.placement.shadow.build import Live, capacity_of, profile_of
from costart.placement.shadow.learned import LearnedRuntimes
from costart.placement.shadow.plan import (
    DEFAULT_DEPTH,
    DEFAULT_WINDOW_NS,
    PlannedStart,
    Waiting,
    plan_queue,
)
from costart.placement.shadow.runtime import gang_runtime


@dataclass(frozen=True)
class QueueInputs:
    """What every plan of one World shares, whatever its runs last: the live groups in
    the session order, each node's capacity, and each waiting group (PENDING or
    RESERVING) in that order with its demands and scopes. `estimate_starts` makes three
    plans of one World and builds these once."""

    live: Live
    capacity: list[Vec]
    waiting: list[tuple[GroupState, list[Demand], list[Scope]]]


def queue_inputs(
    cluster: Cluster,
    world: World,
    placement_groups: Mapping[str, Topology] | None = None,
    live: Live | None = None,
) -> QueueInputs:
    """The `QueueInputs` of ``world`` (``live``: its live groups in order, if known)."""
    live = live_in_order(world) if live is None else live
    definitions = dict(placement_groups or {})
    waiting = [
        (
            group,
            gang_demands(members, cluster, fixed=True),
            resolve_scopes(group.spec, cluster, definitions, world, group),
        )
        for group, members in live
        if group.status in GROUP_WAITING
    ]
    return QueueInputs(live, capacity_of(cluster), waiting)


def expected_starts(
    cluster: Cluster,
    world: World,
    now_ns: int,
    *,
    free: Sequence[Vec] | None = None,
    placement_groups: Mapping[str, Topology] | None = None,
    depth: int = DEFAULT_DEPTH,
    window_ns: int = DEFAULT_WINDOW_NS,
    learned: LearnedRuntimes | None = None,
    admit_as_controller: bool = False,
    inputs: QueueInputs | None = None,
) -> dict[str, PlannedStart]:
    """Each waiting group's `PlannedStart`, by name. Runs last as long as
    `costart.domain.expected_runtime` says (limit first), or as ``learned`` says.
    ``admit_as_controller``: each gang is checked over the run the controller admits it
    on, and keeps later groups off its capacity from when the controller's claim does
    (`costart.placement.shadow.admission`). ``inputs``: the World's `QueueInputs`, when
    already built (for the same ``placement_groups``)."""
    history = world.runtime_history
    runtime_of = None if learned is None else learned.runtime
    end_of = None if learned is None else learned.end
    if inputs is None:
        inputs = queue_inputs(cluster, world, placement_groups)
    queue = [
        Waiting(
            group.name,
            demands,
            scopes,
            gang_runtime(group.spec, history, runtime_of),
            admitted_runtime(group, history) if admit_as_controller else None,
            claimed_from(group) if admit_as_controller else None,
        )
        for group, demands, scopes in inputs.waiting
    ]
    profile = profile_of(
        cluster, inputs.live, now_ns, free, history, end_of, capacity=inputs.capacity
    )
    return plan_queue(cluster, profile, queue, depth=depth, window_ns=window_ns).starts
