"""The shadow-time planner: when would each waiting group start, on which nodes, and may
lower work start now without delaying any of those starts (issue 35, ADR 0107).

Pure over (cluster, live groups, now, free capacity): no clock, stable orders, the same
answer for the same input. `CapacityProfile` is capacity in time (`profile`), built from
the World (`build`); `ShadowPlanner` plans waiting groups in order over it (`plan`);
`admits` answers whether lower work may start now (`check`); `expected_starts` plans
every waiting group of a World (`queue`), the answer to "when would group X start";
`estimate_starts` adds the interval the displays show (`estimate`).
"""

from costart.placement.shadow.build import OUTSIDE, profile_of, world_uses
from costart.placement.shadow.check import Admission, admits
from costart.placement.shadow.estimate import StartEstimate, estimate_starts
from costart.placement.shadow.plan import (
    DEFAULT_DEPTH,
    DEFAULT_WINDOW_NS,
    PlanBasis,
    PlannedStart,
    ShadowPlanner,
    Waiting,
    plan_queue,
)
from costart.placement.shadow.profile import CapacityProfile, Use
from costart.placement.shadow.queue import expected_starts
from costart.placement.shadow.runtime import gang_runtime, weakest

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_WINDOW_NS",
    "OUTSIDE",
    "Admission",
    "CapacityProfile",
    "PlanBasis",
    "PlannedStart",
    "ShadowPlanner",
    "StartEstimate",
    "Use",
    "Waiting",
    "admits",
    "estimate_starts",
    "expected_starts",
    "gang_runtime",
    "plan_queue",
    "profile_of",
    "weakest",
    "world_uses",
]
