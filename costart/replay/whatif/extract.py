"""Reading the recorded workload out of a log (`recorded_workload`).

The log is folded event by event (as replay rebuilds it) so each event is read against
the state it left, the way the simulator's embedding controller reacts to it: a
placement that left the member PLACED is the next placement whose claims the host
readies; a `MemberStarted` is the next start whose end the host reports. Each report is
stored as a delay from what it answered (the placement, the start), so a re-run under
other settings readies claims and ends runs as long after its own placements and starts
as the recorded ones took (ADR 0131).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable

import msgspec

from costart.display import duration
from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.ids import id_text
from costart.domain.spec_types import GroupSpec
from costart.domain.world import World
from costart.replay.source import ReplaySource
from costart.replay.whatif.options import WhatIfError
from costart.replay.whatif.workload import INPUT_EVENTS, OWN_FAILURES, RecordedWorkload
from costart.sim.distributions import Const
from costart.sim.setup import NodeChange
from costart.sim.workload import (
    Arrival,
    ClaimOutcome,
    MemberBehaviour,
    MemberRun,
    RecordedMember,
    RunOutcome,
    ScaleChange,
)

DEFAULT_SESSION_INTERVAL_NS = 10 * 10**9
# Session times closer than this are not a grid the sessions ran on (a controller on a
# wall clock runs them when its timer fires, not on round times).
MIN_GRID_NS = 10**6
HOST = Actor.host("whatif")


class _Member:
    __slots__ = (
        "claims",
        "first_end",
        "group",
        "kind",
        "name",
        "open_at",
        "placements",
        "ready_at",
        "runs",
        "unknown",
    )

    def __init__(self, group: str, name: str, kind: str) -> None:
        self.group = group
        self.name = name
        self.kind = kind
        self.placements: list[tuple[int, int]] = []  # (at_ns, member attempt)
        self.claims: list[dict[str, ClaimOutcome]] = []
        self.runs: list[RunOutcome] = []
        self.open_at: int | None = None
        self.unknown: list[tuple[int, int]] = []  # (run index, at least this long)
        self.ready_at = 0  # its last placement or claim report: it may start from then
        self.first_end: int | None = None  # the run's first task success

    @property
    def ref(self) -> str:
        return f"{self.group}/{self.name}"

    def end_run(self, outcome: RunOutcome) -> None:
        self.runs.append(outcome)
        self.open_at = self.first_end = None

    def cut_run(self, at_ns: int) -> None:
        """The run stopped before it ended by itself: only a lower bound is known."""
        assert self.open_at is not None
        self.unknown.append((len(self.runs), at_ns - self.open_at))
        self.end_run(RunOutcome(None))


class _Group:
    __slots__ = ("at_ns", "cancel_at", "cancelled_by", "members", "scales", "spec", "started")

    def __init__(self, at_ns: int, spec: GroupSpec) -> None:
        self.at_ns = at_ns
        self.spec = spec
        self.members: dict[str, _Member] = {}
        self.started: int | None = None
        self.cancel_at: int | None = None
        self.cancelled_by: Actor | None = None
        self.scales: list[ScaleChange] = []


class _Reader:
    """One pass over the log, keeping what each input event says."""

    def __init__(self) -> None:
        self.world = World()
        self.groups: dict[str, _Group] = {}  # by group id text, in submission order
        self.submitters: dict[str, Actor | None] = {}
        self.members: dict[str, _Member] = {}  # by member id text
        self.node_changes: list[NodeChange] = []
        self.sessions: set[int] = set()
        self.task_claims = 0
        self.released: dict[str, int] = {}  # each group's last barrier release
        self.start_lags: list[int] = []  # a start later than the controller allowed it
        self.end_spreads: list[int] = []  # a job's tasks ending apart
        self.first_ns: int | None = None
        self.last_ns = 0
        self.count = 0

    def read(self, events: Iterable[tuple[int, ev.DomainEvent]]) -> None:
        world = self.world
        for position, event in events:
            world.apply(event)
            world.position = position
            self.count += 1
            self.first_ns = event.at_ns if self.first_ns is None else self.first_ns
            self.last_ns = event.at_ns
            self._event(event)

    def _event(self, event: ev.DomainEvent) -> None:
        kind = type(event)
        actor = event.actor
        if kind not in INPUT_EVENTS and (actor is None or actor.kind == "timer"):
            self.sessions.add(event.at_ns)  # written by a session: placement or timers
        if isinstance(event, ev.GroupSubmitted):
            self._submitted(event)
        elif isinstance(event, ev.NodeStatusChanged):
            self.node_changes.append(
                NodeChange(event.at_ns, event.node, event.status, actor or HOST)
            )
        elif isinstance(event, ev.BarrierReleased):
            group = self.groups[id_text(event.group_id)]
            group.started = event.at_ns if group.started is None else group.started
            self.released[id_text(event.group_id)] = event.at_ns
        elif isinstance(event, ev.GroupCancelled):
            group = self.groups[id_text(event.group_id)]
            group.cancel_at, group.cancelled_by = event.at_ns, actor
        member = self.members.get(id_text(event.originator_id))
        if member is None:
            return
        self._member_event(member, event)
        if (
            member.open_at is not None
            and self.world.members[id_text(event.originator_id)].status != "RUNNING"
        ):
            member.cut_run(event.at_ns)

    def _submitted(self, event: ev.GroupSubmitted) -> None:
        key = id_text(event.originator_id)
        group = self.groups[key] = _Group(event.at_ns, event.spec)
        self.submitters[key] = event.actor
        for spec, member_id in zip(event.spec.members, event.member_ids, strict=True):
            member = _Member(event.spec.name, spec.name, spec.kind)
            group.members[spec.name] = self.members[id_text(member_id)] = member

    def _member_event(self, member: _Member, event: ev.DomainEvent) -> None:
        state = self.world.members[id_text(event.originator_id)]
        if isinstance(event, ev.MemberPlaced):
            member.ready_at = event.at_ns
            if state.status == "PLACED":
                member.placements.append((event.at_ns, state.attempt))
                member.claims.append({})
        elif isinstance(event, ev.ClaimReady | ev.ClaimFailed):
            member.ready_at = event.at_ns
            self._claim(member, event)
        elif isinstance(event, ev.MemberStarted):
            if member.open_at is not None:  # a start without an end seen: cut there
                member.cut_run(event.at_ns)
            member.open_at = event.at_ns
            allowed = max(member.ready_at, self.released.get(id_text(event.group_id), 0))
            if event.at_ns > allowed:
                self.start_lags.append(event.at_ns - allowed)
        elif isinstance(event, ev.TaskSucceeded):
            member.first_end = event.at_ns if member.first_end is None else member.first_end
        elif isinstance(event, ev.MemberSucceeded):  # after its last task's success
            if member.open_at is not None:
                if member.first_end is not None and event.at_ns > member.first_end:
                    self.end_spreads.append(event.at_ns - member.first_end)
                member.end_run(RunOutcome(event.at_ns - member.open_at))
        elif isinstance(event, ev.MemberFailed):
            # A task's own end, reported (not a timer's or a node loss's doing).
            reporter = event.actor
            reported = reporter is not None and reporter.kind != "timer"
            if reported and event.reason in OWN_FAILURES and member.open_at is not None:
                member.end_run(RunOutcome(event.at_ns - member.open_at, event.reason))
        elif isinstance(event, ev.MemberScaled) and event.actor is not None:
            group = self.groups[id_text(event.group_id)]
            group.scales.append(ScaleChange(event.at_ns, member.name, event.replicas, event.actor))

    def _claim(self, member: _Member, event: ev.ClaimReady | ev.ClaimFailed) -> None:
        if event.task is not None:
            self.task_claims += 1
            return
        for k in range(len(member.placements) - 1, -1, -1):
            placed_at, attempt = member.placements[k]
            if event.attempt is None or attempt == event.attempt:
                outcomes = member.claims[k]
                if event.claim not in outcomes:
                    failed = isinstance(event, ev.ClaimFailed)
                    outcomes[event.claim] = ClaimOutcome(event.at_ns - placed_at, failed)
                return


def _grid(sessions: list[int], first_ns: int) -> tuple[int, int, list[str]]:
    """(interval, clock start, assumptions): the largest interval every recorded
    session time sits on, and the grid time at or before the log's first event where
    the re-run's clock starts."""
    if len(sessions) < 2:
        return (
            DEFAULT_SESSION_INTERVAL_NS,
            min(first_ns, *sessions),
            [
                "fewer than two sessions wrote anything: sessions are assumed every "
                f"{duration(DEFAULT_SESSION_INTERVAL_NS)}"
            ],
        )
    # A session 1 ns before a whole millisecond is the simulator's "one interval
    # after its start" (its first session, and those that follow it while the state
    # stays dirty): it sits on the grid 1 ns early.
    snapped = [t + 1 if (t + 1) % MIN_GRID_NS == 0 and t % MIN_GRID_NS else t for t in sessions]
    anchor = snapped[0]
    interval = 0
    for t in snapped[1:]:
        interval = math.gcd(interval, t - anchor)
    said: list[str] = []
    if interval < MIN_GRID_NS:
        interval = min(b - a for a, b in itertools.pairwise(sessions))
        said.append(
            "the recorded sessions do not sit on a grid (a controller on a wall clock): "
            f"the re-run's sessions are every {duration(interval)} from the first one, "
            "so a decision may move to the nearest session of that grid"
        )
    return interval, anchor - -(-(anchor - first_ns) // interval) * interval, said


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _member_inputs(
    member: _Member, spec: GroupSpec, said: list[str]
) -> tuple[RecordedMember, MemberRun, MemberBehaviour]:
    """What one member recorded, with every unknown stated in ``said``."""
    claims = spec.member(member.name).claims
    outcomes: list[dict[str, ClaimOutcome]] = []
    for k, recorded in enumerate(member.claims, 1):
        full = dict(recorded)
        for claim in claims:
            if claim not in full:
                full[claim] = ClaimOutcome(None)
                said.append(
                    f"{member.ref}: claim {claim} of its {_ordinal(k)} placement was never "
                    "reported READY or FAILED while that placement lasted: assumed not to be"
                )
        outcomes.append(full)
    runs = list(member.runs)
    successes = [r.after_ns for r in runs if r.after_ns is not None and not r.reason]
    reference = successes[-1] if successes else None
    for index, at_least in member.unknown:
        if member.kind != "job":
            continue  # a service runs until it is stopped: nothing unknown
        if reference is not None and reference > at_least:
            runs[index] = RunOutcome(reference, assumed=True)
            how = f"as long as its recorded successful run ({duration(reference)})"
        else:
            runs[index] = RunOutcome(at_least + 1, assumed=True)
            how = "just after it was stopped (the shortest run the log allows)"
        said.append(
            f"{member.ref}: its {_ordinal(index + 1)} start was stopped (or the log ended) "
            f"after {duration(at_least)}, before it ended: assumed to succeed {how}"
        )
    delays = [o.delay_ns for r in outcomes for o in r.values() if o.delay_ns is not None]
    delay = int(statistics.median(delays)) if delays else 0
    behaviour = MemberBehaviour(claim_delay=Const(f"{delay}ns"))
    if member.kind != "job":
        return RecordedMember(tuple(outcomes), tuple(runs)), MemberRun(), behaviour
    if reference is None:
        bounds = [b for _, b in member.unknown]
        runtime = max(bounds) + 1 if bounds else None
        if runtime is None:
            said.append(
                f"{member.ref} never ran in the log: a start of it is assumed to succeed "
                "after 1h (the simulator's default run time)"
            )
    else:
        runtime = reference
    return RecordedMember(tuple(outcomes), tuple(runs)), MemberRun(runtime), behaviour


def _arrival(key: str, group: _Group, reader: _Reader, said: list[str]) -> Arrival:
    recorded: dict[str, RecordedMember] = {}
    runs: dict[str, MemberRun] = {}
    behaviour: dict[str, MemberBehaviour] = {}
    for spec in group.spec.members:
        member = group.members[spec.name]
        recorded[spec.name], runs[spec.name], behaviour[spec.name] = _member_inputs(
            member, group.spec, said
        )
    services_only = all(m.kind == "replica-set" for m in group.spec.members)
    lifetime = cancel_at = None
    if group.cancel_at is not None:
        if services_only and group.started is not None:
            lifetime = group.cancel_at - group.started  # as the simulator models services
        else:
            cancel_at = group.cancel_at
    return Arrival(
        group.at_ns,
        group.spec,
        runs,
        behaviour,
        lifetime_ns=lifetime,
        recorded=recorded,
        submitter=reader.submitters[key],
        cancel_at_ns=cancel_at,
        cancelled_by=group.cancelled_by,
        scales=tuple(group.scales),
    )


def recorded_workload(source: ReplaySource, where: str) -> RecordedWorkload:
    """The inputs of the log ``source`` (``where``: its location, as the user named
    it). Raises `WhatIfError` for a log with no group in it."""
    reader = _Reader()
    reader.read(source.read_events())
    for member in reader.members.values():
        if member.open_at is not None:  # still running when the log ends
            member.cut_run(reader.last_ns)
    if not reader.groups or reader.first_ns is None:
        raise WhatIfError(f"{where}: the log holds no submitted group: nothing to re-run")
    sessions = sorted(reader.sessions)
    interval, start, said = _grid(sessions, reader.first_ns)
    arrivals = [_arrival(k, g, reader, said) for k, g in reader.groups.items()]
    if any(m.kind == "replica-set" for a in arrivals for m in a.spec.members):
        said.append("a service that did not crash while it ran is assumed not to crash later")
    said.append(
        "a placement the log does not have gets each claim READY after its member's "
        "median recorded claim delay (0s when none was recorded), and a start the log "
        "does not have runs its member's recorded successful run time without failing"
    )
    if reader.start_lags:
        said.append(
            f"{len(reader.start_lags)} starts came after the controller allowed them (up to "
            f"{duration(max(reader.start_lags))} later): the re-run starts members at once"
        )
    if reader.end_spreads:
        said.append(
            f"the tasks of {len(reader.end_spreads)} job runs ended apart (up to "
            f"{duration(max(reader.end_spreads))}): the re-run ends a run's tasks together, "
            "at the last one's time"
        )
    if reader.task_claims:
        said.append(
            f"{reader.task_claims} reports of tasks' own claims are not replayed "
            "(the simulator readies member claims only)"
        )
    return RecordedWorkload(
        source=where,
        first_ns=reader.first_ns,
        start_ns=start,
        end_ns=reader.last_ns,
        events=reader.count,
        session_interval_ns=interval,
        first_session_ns=sessions[0] if sessions else None,
        session_times=tuple(sessions),
        arrivals=arrivals,
        node_changes=tuple(reader.node_changes),
        assumptions=said,
    )


def as_json(workload: RecordedWorkload) -> bytes:
    """The workload as JSON (plain data: print it, keep it, compare it)."""
    return msgspec.json.encode(workload)
