"""Every waiting group's expected start with an interval: what `get -o wide`, `describe`,
REST and the board show (issue 36), like Slurm's ``squeue --start``.

`estimate_starts` is the one entry point the displays call; how the point and the
interval are made (the shadow plan of the queue, `expected_starts`, and the spread of
the runtimes it rests on) lives behind it. Pure over (cluster, World, now): no clock,
stable orders, the same answer for the same input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from costart.domain.spec_types import Topology
from costart.domain.world import World
from costart.placement.capacity import Vec
from costart.placement.cluster import Cluster
from costart.placement.shadow.plan import DEFAULT_DEPTH, DEFAULT_WINDOW_NS, PlanBasis, Unplanned
from costart.placement.shadow.queue import expected_starts


class StartEstimate(NamedTuple):
    """When a waiting group is expected to start (``start_ns`` None: no start within the
    plan, ``unplanned`` says why), an interval meant to hold the actual start four times
    in five (``earliest_ns`` at the 10th percentile, ``latest_ns`` at the 90th; None
    where unbounded), and what the estimate rests on (``basis``, as `PlannedStart`'s)."""

    name: str
    start_ns: int | None
    earliest_ns: int | None
    latest_ns: int | None
    basis: PlanBasis
    unplanned: Unplanned = ""


def estimate_starts(
    cluster: Cluster,
    world: World,
    now_ns: int,
    *,
    free: Sequence[Vec] | None = None,
    placement_groups: Mapping[str, Topology] | None = None,
    depth: int = DEFAULT_DEPTH,
    window_ns: int = DEFAULT_WINDOW_NS,
) -> dict[str, StartEstimate]:
    """Each waiting group's `StartEstimate`, by name, in the queue's order."""
    planned = expected_starts(
        cluster,
        world,
        now_ns,
        free=free,
        placement_groups=placement_groups,
        depth=depth,
        window_ns=window_ns,
    )
    # The interval is the plan's point until the runtime spread is modelled (issue 36
    # item 3 replaces this with the spread of the runtimes the plan rests on).
    return {
        name: StartEstimate(name, p.start_ns, p.start_ns, p.start_ns, p.basis, p.unplanned)
        for name, p in planned.items()
    }
