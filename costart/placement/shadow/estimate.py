"""Every waiting group's expected start with an interval: what `get -o wide`, `describe`,
REST and the board show (issue 36), like Slurm's ``squeue --start``.

`estimate_starts` is the one entry point the displays call. The point is the shadow
plan of the queue (`expected_starts`) with every run as long as the median of what the
log has learned of runs like it (`LearnedRuntimes`, capped at the declared limit), else
of the shares of their limits that ended runs held (`LimitShares`, ADR 0146; the limit
where nothing is known), lower work going before a planned gang only where the
controller would admit it (`costart.placement.shadow.admission`, ADR 0147); the
interval is the same plan made again with every run at the 10th and at the 90th
percentile (ADR 0138); a group backing off starts no earlier than its retry.
``runtimes="limits"`` plans over declared limits only, as ``squeue --start`` does (the
benchmark's baseline).
Pure over (cluster, World, now): no clock, stable orders, the same answer for the same
input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal, NamedTuple

from costart.domain.runtime_history import RuntimeHistory
from costart.domain.spec_types import Topology
from costart.domain.world import World
from costart.placement.capacity import Vec
from costart.placement.cluster import Cluster
from costart.placement.holdings import live_in_order
from costart.placement.shadow.learned import LearnedRuntimes
from costart.placement.shadow.limit_shares import LimitShares
from costart.placement.shadow.plan import (
    DEFAULT_DEPTH,
    DEFAULT_WINDOW_NS,
    PlanBasis,
    PlannedStart,
    Unplanned,
)
from costart.placement.shadow.queue import expected_starts, queue_inputs

POINT_LEVEL: Final = 0.5
"""The point plans every run at the median (`LearnedRuntimes`)."""
LOW_LEVEL: Final = 0.1
"""The earliest start plans every run at this level."""
HIGH_LEVEL: Final = 0.9
"""The latest start plans every run at this level."""

Runtimes = Literal["learned", "limits"]
"""What runs last in the plan: ``learned`` (the quantiles of the samples, see the
module) or ``limits`` (declared limits only, Slurm's model: no interval)."""


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
    runtimes: Runtimes = "learned",
) -> dict[str, StartEstimate]:
    """Each waiting group's `StartEstimate`, by name, in the queue's order: the point
    at the median run, ``earliest_ns``/``latest_ns`` at the low and high percentile
    (see the module), widened to hold the point."""

    live = live_in_order(world)
    inputs = queue_inputs(cluster, world, placement_groups, live)  # the same at every level

    def plan(
        level: float,
        history: RuntimeHistory,
        unlimited: bool = True,
        shares: LimitShares | None = None,
    ) -> dict[str, PlannedStart]:
        return expected_starts(
            cluster,
            world,
            now_ns,
            free=free,
            placement_groups=placement_groups,
            depth=depth,
            window_ns=window_ns,
            learned=LearnedRuntimes(
                history, level, live, now_ns, unlimited=unlimited, grid=unlimited, shares=shares
            ),
            admit_as_controller=unlimited,
            inputs=inputs,
        )

    if runtimes == "limits":
        limits = plan(POINT_LEVEL, RuntimeHistory(), unlimited=False)
        return {
            name: StartEstimate(name, p.start_ns, p.start_ns, p.start_ns, p.basis, p.unplanned)
            for name, p in limits.items()
        }
    history = world.runtime_history
    shares = LimitShares.of(world)
    point = plan(POINT_LEVEL, history, shares=shares)
    low = plan(LOW_LEVEL, history, shares=shares)
    high = plan(HIGH_LEVEL, history, shares=shares)
    out: dict[str, StartEstimate] = {}
    for group, _ in live:
        p = point.get(group.name)
        if p is None:
            continue
        # A group backing off is not placed before its retry, whatever fits.
        retry = group.retry_at_ns

        def after_retry(start: int | None, retry: int = retry) -> int | None:
            return None if start is None else max(start, retry)

        start = after_retry(p.start_ns)
        earliest, latest = interval(
            start, after_retry(low[group.name].start_ns), after_retry(high[group.name].start_ns)
        )
        out[group.name] = StartEstimate(group.name, start, earliest, latest, p.basis, p.unplanned)
    return out


def interval(point: int | None, low: int | None, high: int | None) -> tuple[int | None, int | None]:
    """The interval of a point from the low and high plans' starts, made to hold the
    point (shorter runs can start a group later: one ahead of it now fits earlier, on
    its nodes). No point: nothing bounds the start from above. None: unbounded."""
    if point is None:
        return low, None
    earliest = point if low is None else min(low, point)
    latest = None if high is None else max(high, point)
    return earliest, latest
