"""A log's figures, by feeding its events to the simulator's own accounting.

`costart sim` keeps its figures incrementally from the events its controller writes
(`costart.sim.metrics.GpuUsage`, its per-group `Original`s, the embedder's reactions to
barrier releases, restarts and ends). Any log holds the same events, so the same code
reads any log after the fact: a real cluster's, a simulated run's, a what-if re-run's.
A simulated run's log read here gives the figures `costart sim` reported for it (a
test holds the two equal), so an actual and a what-if are measured alike (ADR 0134).

The simulator accounts what one command wrote at once, against the state after it:
first every member the command touched, then the group-level reactions. A log does not
mark where one command's events end, so the events of one controller time are taken as
one batch: no time passes inside a batch, so every integral is the same, and each
member is judged on the state it was left in at that time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from costart.display import clock
from costart.domain import events as ev
from costart.domain.events import DomainEvent
from costart.domain.ids import id_text
from costart.domain.world import World
from costart.placement.cluster import Cluster
from costart.replay.outcomes.figures import GroupFate, LogFigures, Window
from costart.replay.source import ReplaySource
from costart.sim.breakdown import figures_of, hours, seconds
from costart.sim.engine import MEMBER_EVENTS
from costart.sim.metrics import GpuUsage, Original, count_stop
from costart.sim.pooled import pooled_fields
from costart.sim.results import deadlocked_of, holding_originals, holds_accelerators

if TYPE_CHECKING:
    from costart.sim.engine import Engine

# The events that put a member's tasks on nodes (placed, or held by a reservation).
_PLACING = frozenset({ev.MemberPlaced, ev.MemberHeld})
_ENDS: dict[type[DomainEvent], str] = {
    ev.GroupSucceeded: "succeeded",
    ev.GroupFailed: "failed",
    ev.GroupCancelled: "cancelled",
}
# The group-level events the embedder accounts (`LogAccounts._react`).
_REACTED: frozenset[type[DomainEvent]] = frozenset(
    {
        ev.BarrierReleased,
        ev.PlacementReleased,
        ev.MemberStarted,
        ev.MemberFailed,
        ev.MemberRestarted,
        ev.GroupRestarted,
        *_ENDS,
    }
)


def capacity_of(cluster: Cluster) -> int:
    """The cluster's accelerators (every node's GPUs, as the simulator counts them)."""
    return sum(node.gpu for node in cluster.nodes)


class LogAccounts:
    """The simulator's accounting, fed from a log: the usage integrals, one `Original`
    per submitted group, and the World folded alongside (the state each member is
    judged on)."""

    def __init__(self, cluster: Cluster) -> None:
        self.usage = GpuUsage(capacity_of(cluster))
        self.nodes = cluster.index
        self.world = World()
        self.originals: list[Original] = []
        self.by_group: dict[str, Original] = {}
        self.group_keys: dict[int, str] = {}
        self.events = 0
        self.last_ns = 0
        self._batch: list[DomainEvent] = []
        self._batch_ns = 0

    def feed(self, event: DomainEvent) -> None:
        """Fold one event (in log order); a new controller time accounts the last one's."""
        if self._batch and event.at_ns != self._batch_ns:
            self._flush()
        if type(event) in _PLACING:
            self._check_nodes(event)
        self.world.apply(event)
        self.events += 1
        self.last_ns = event.at_ns
        if isinstance(event, ev.GroupSubmitted):
            self._submitted(event)
        self._batch.append(event)
        self._batch_ns = event.at_ns

    def _check_nodes(self, event: DomainEvent) -> None:
        """A log placed on a node the cluster does not have was run on another cluster:
        its capacity would be wrong, so it is refused, naming the node."""
        for assignment in cast(ev.MemberPlaced, event).assignments:
            if assignment.node not in self.nodes:
                raise ValueError(
                    f"the log places on node {assignment.node!r} (at {clock(event.at_ns)}), "
                    "which the cluster given does not have: give the cluster it ran on"
                )

    def _submitted(self, event: ev.GroupSubmitted) -> None:
        original = Original(len(self.originals), event.spec.name, event.at_ns)
        self.originals.append(original)
        key = id_text(event.originator_id)
        self.by_group[key] = original
        self.group_keys[original.index] = key
        self.usage.waiting += 1

    def _flush(self) -> None:
        """Account one controller time's events: the members they touched (on the state
        they were left in), then the group-level reactions, in log order."""
        usage = self.usage
        usage.advance(self._batch_ns)
        members = self.world.members
        for event in self._batch:
            if type(event) in MEMBER_EVENTS:
                key = id_text(event.originator_id)
                usage.member_changed(key, members[key], self.by_group[id_text(event.group_id)])
        for event in self._batch:
            if type(event) in _REACTED:
                self._react(self.by_group[id_text(event.group_id)], event)
        usage.sample(self._batch_ns)
        self._batch = []

    def _react(self, original: Original, event: DomainEvent) -> None:
        """The embedder's accounting of a group-level event (`costart.sim.embedder`)."""
        usage = self.usage
        if isinstance(event, ev.BarrierReleased):
            usage.group_started(original, event.at_ns)
        elif isinstance(event, ev.PlacementReleased):
            usage.set_full_started(original, False)
        elif isinstance(event, ev.MemberStarted):
            usage.member_started(original)
        elif isinstance(event, ev.MemberFailed):
            count_stop(original, event.reason)
        elif isinstance(event, ev.MemberRestarted | ev.GroupRestarted):
            usage.restarted(original, whole_group=isinstance(event, ev.GroupRestarted))
        else:
            usage.group_ended(original, _ENDS[type(event)], event.at_ns)

    def finish(self, end_ns: int) -> None:
        """Account the last time's events and carry every count to ``end_ns``."""
        if self._batch:
            self._flush()
        self.usage.advance(end_ns)
        for original in self.originals:
            self.usage.settle(original)
        self.usage.sample(end_ns)

    def holding(self) -> set[int]:
        """The live groups holding or using accelerators now (the deadlock test's)."""
        world = self.world
        out: set[int] = set()
        for index, key in self.group_keys.items():
            group = world.groups[key]
            if not group.is_terminal and holds_accelerators(world.members_of(group)):
                out.add(index)
        return out


def _events(source: ReplaySource, until_ns: int | None) -> Iterator[DomainEvent]:
    for _, event in source.read_events():
        if until_ns is not None and event.at_ns > until_ns:
            return
        yield event


def read_figures(
    source: ReplaySource,
    cluster: Cluster,
    *,
    label: str,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> LogFigures:
    """The figures of the log ``source`` reads, run on ``cluster``, over a window: from
    ``start_ns`` (default: the log's first event; never after it) to ``end_ns``
    (default: its last event; events after it are not read, and a later end carries the
    state as it was at the last event). Raises `ValueError` naming the problem for a log
    without events, a window that ends before it starts or starts after the log's first
    event, or a log placed on a node ``cluster`` lacks."""
    accounts = LogAccounts(cluster)
    first: int | None = None
    last = 0
    for event in _events(source, end_ns):
        if first is None:
            first = event.at_ns
        last = event.at_ns
        accounts.feed(event)
    if first is None:
        raise ValueError("the log holds no events (up to the window's end): nothing to measure")
    window = Window(
        start_ns if start_ns is not None else first, end_ns if end_ns is not None else last
    )
    if window.end_ns < window.start_ns:
        raise ValueError(
            f"the window ends ({clock(window.end_ns)}) before it starts ({clock(window.start_ns)})"
        )
    if window.start_ns > first:
        # Everything the log holds is counted: capacity from a later start would count
        # less time than the accelerators were used in.
        raise ValueError(
            f"the window starts ({clock(window.start_ns)}) after the log's first event "
            f"({clock(first)}): start it at or before that"
        )
    accounts.finish(window.end_ns)
    return figures_from(accounts, window, label)


def figures_from(accounts: LogAccounts, window: Window, label: str) -> LogFigures:
    """The figures of accounts carried to ``window.end_ns`` (`LogAccounts.finish`)."""
    return figures_of_originals(
        accounts.originals,
        accounts.usage,
        window,
        label,
        holding=accounts.holding(),
        events=accounts.events,
        last_event_ns=accounts.last_ns,
    )


def run_figures(engine: Engine, label: str, window: Window | None = None) -> LogFigures:
    """The figures of a finished simulated run from its own accounting, over virtual
    time from 0 to the run's end, as `costart sim` reports them, or over ``window``
    (a what-if re-run on a log's clock: from the log's first event, carried to the
    window's end, which must not come before the run's). For every policy,
    the peers' included: a peer's embedder keeps its own sense of "started" (Volcano:
    every member running; Kueue and YuniKorn: its pods) and its own queue before the
    controller sees a group, which its log alone cannot tell (ADR 0134). For costart's
    policies it equals `read_figures` of the run's log over the same window."""
    embedder = engine.embedder
    if window is None:
        window = Window(0, engine.now_ns)
    elif window.end_ns < engine.now_ns:
        raise ValueError(
            f"the window ends ({clock(window.end_ns)}) before the run did ({clock(engine.now_ns)})"
        )
    else:
        engine.usage.advance(window.end_ns)  # carried as it was at the run's end
    for original in embedder.originals:
        engine.usage.settle(original)
    return figures_of_originals(
        embedder.originals,
        engine.usage,
        window,
        label,
        holding=holding_originals(engine, embedder),
        events=engine.controller.world.position,
        last_event_ns=engine.controller.world.clock_ns,
    )


def figures_of_originals(
    originals: list[Original],
    usage: GpuUsage,
    window: Window,
    label: str,
    *,
    holding: set[int],
    events: int,
    last_event_ns: int,
) -> LogFigures:
    """The figures of settled originals (`GpuUsage.settle`, to ``window.end_ns``):
    pooled as `costart.sim.results.result_of` pools them, each group's fate beside."""
    end = window.end_ns
    deadlocked = deadlocked_of(originals, holding)
    pooled = figures_of("pooled", originals, end)
    capacity_ns = usage.capacity_gpus * window.span_ns
    stuck = {o.index for o in originals if o.index in holding and o.name in deadlocked}
    seen: dict[str, int] = {}
    fates = []
    for o in originals:
        seen[o.name] = seen.get(o.name, 0) + 1
        fates.append(_fate(o, seen[o.name], end, o.index in stuck))
    return LogFigures(
        label=label,
        window=window,
        capacity_gpus=usage.capacity_gpus,
        events=events,
        last_event_ns=last_event_ns,
        **pooled_fields(pooled, originals, usage, capacity_ns, len(deadlocked)),
        time_to_start_max_s=pooled.time_to_start_max_s,
        deadlocked_groups=deadlocked,
        fates=fates,
        timeline=usage.timeline,
    )


def _fate(original: Original, occurrence: int, end_ns: int, deadlocked: bool) -> GroupFate:
    started = original.started_ns
    if original.outcome is not None:
        end = original.outcome
    elif deadlocked:
        end = "deadlocked"
    else:
        end = "running" if started is not None else "waiting"
    wait_ns = (started if started is not None else end_ns) - original.at_ns
    idle, waste, thrown = original.idle_gpu_ns, original.waste_gpu_ns, original.thrown_gpu_ns
    return GroupFate(
        name=original.name,
        occurrence=occurrence,
        submitted_ns=original.at_ns,
        started_ns=started,
        ended_ns=original.ended_ns,
        end=end,
        wait_s=seconds(wait_ns) or 0.0,
        censored=started is None,
        idle_held_gpu_hours=hours(idle),
        partial_start_waste_gpu_hours=hours(waste),
        thrown_away_gpu_hours=hours(thrown),
        wasted_gpu_hours=hours(idle + waste + thrown),
        busy_gpu_hours=hours(original.busy_gpu_ns),
        restarts=original.restarts,
        partial_start=original.partial,
    )
