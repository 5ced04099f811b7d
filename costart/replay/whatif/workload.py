"""The recorded workload of a log: only what the controller was fed, never what it decided.

`RecordedWorkload` is plain data: the arrivals (the simulator's `Arrival`, with what the
log recorded of each member per placement and per start), the nodes reported up or
down, the times the controller's sessions wrote something (from which the session
cadence is inferred), and the assumptions: plain sentences for everything the log
cannot tell (a run stopped before it ended, a claim never reported) — never invented
silently. The inputs and decisions are told apart by event type (ADR 0131).
"""

from __future__ import annotations

import msgspec

from costart.domain import events as ev
from costart.sim.setup import NodeChange
from costart.sim.workload import Arrival

# Events that carry what the controller was fed: a submission, a report from the host
# (claims, task starts and ends), a node status, a scale change or a cancel.
INPUT_EVENTS: frozenset[type[ev.DomainEvent]] = frozenset(
    {
        ev.GroupSubmitted,
        ev.MemberCreated,
        ev.ClaimReady,
        ev.ClaimFailed,
        ev.MemberStarted,
        ev.TaskStarted,
        ev.TaskSucceeded,
        ev.NodeStatusChanged,
        ev.MemberScaled,
        ev.GroupCancelled,
    }
)
# A run's own end, as a task reports it; the other failure reasons are the
# controller's doing (a node lost, a preemption, a limit, a claim) or a consequence.
OWN_FAILURES = frozenset({"error", "oom", "refused"})


class RecordedWorkload(msgspec.Struct, frozen=True):
    """What a log fed its controller. Times are the log's own (controller ns), from
    its first event ``first_ns`` to its last ``end_ns``.

    ``start_ns``: where the re-run's clock starts, at or before the first event, on the
    session grid; ``session_interval_ns``: the cadence of the sessions (the largest
    that holds every recorded session time); ``session_times``: every time a session
    (placement or timers) wrote something, the first of them ``first_session_ns``
    (no session ran before it: had one run, it would have written)."""

    source: str
    first_ns: int
    start_ns: int
    end_ns: int
    events: int
    session_interval_ns: int
    first_session_ns: int | None
    session_times: tuple[int, ...]
    arrivals: list[Arrival]
    node_changes: tuple[NodeChange, ...]
    assumptions: list[str] = msgspec.field(default_factory=list)
