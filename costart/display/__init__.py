"""How people read the controller's numbers: times, durations and pend reasons.

One module per concern, shared by the CLI, REST, replay, the simulator and the demo,
so every output speaks the same words. Pure functions: "now" is always an argument.
"""

from costart.display.expected_start import (
    NOT_WAITING,
    assumption_text,
    freshness_text,
    start_cell,
    start_line,
)
from costart.display.reasons import (
    group_reason,
    member_reason,
    queue_text,
    readable,
    reason_text,
    retry_text,
)
from costart.display.restarts import restarts_text
from costart.display.timefmt import (
    WALL_CLOCK_FLOOR_NS,
    age_reference,
    clock,
    duration,
    moment,
    offset,
    relative,
    rfc3339,
)

__all__ = [
    "NOT_WAITING",
    "WALL_CLOCK_FLOOR_NS",
    "age_reference",
    "assumption_text",
    "clock",
    "duration",
    "freshness_text",
    "group_reason",
    "member_reason",
    "moment",
    "offset",
    "queue_text",
    "readable",
    "reason_text",
    "relative",
    "restarts_text",
    "retry_text",
    "rfc3339",
    "start_cell",
    "start_line",
]
