"""A hypothesis state machine drives the Controller through every phase of a group's life.

Rules have preconditions and pick a group or member that can take them (a PLACED member
with a PENDING claim, a RUNNING job, a restarting member...), so random sequences reach
the barrier, the start, failures of every reason and the whole failure policy; a few
rules send commands that must be refused.

After every step: the invariant checker holds over the whole state and the new events;
a refused command wrote nothing and changed nothing; a trivially simple model of the
barrier (which claims were reported READY since each member's last placement) agrees
with `may_start` and `BarrierReleased`; and the reference model (`tests.reference_model`)
agrees with every failure-policy and success decision. Now and then the log is replayed
into a fresh Controller, whose state must encode to the same bytes.

The run counts accepted commands per kind and events per type, prints them, and fails if
a phase was not reached often enough (`MIN_ACCEPTED`, `MIN_EVENTS`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from costart.controller import Controller
from costart.domain import events as ev
from costart.domain.decisions import HoldCapacity, PlaceGroup, PlaceMember, ReleaseGroup
from costart.domain.errors import DomainError
from costart.domain.events import Assignment
from costart.domain.invariants import EventAudit, check_world
from costart.domain.states import GROUP_STARTED, GroupState, MemberState
from costart.eventlog.codec import canonical_encode
from costart.eventlog.restore import restore
from costart.eventlog.snapshot_schema import encode_state
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import (
    HOST,
    USER,
    ManualClock,
    a_group,
    claim_fail,
    fail,
    ready,
    start,
    succeed,
)
from tests.domain.node_use_check import CHECKS as NODE_USE_CHECKS
from tests.domain.node_use_check import check_node_use
from tests.reference_model import PolicyModel

NAMES = ("g1", "g2", "g3")
REASONS = ("error", "oom", "node-lost", "preempted", "claim-failed")
ACTIONS = ("restart-member", "tolerate", "restart-group", "fail-group")
TALLY: Counter[str] = Counter()  # "ran:KIND", "refused:KIND", "event:TYPE" over a run
REPORTS: list[str] = []  # each run's tally, for the session's terminal summary (conftest)


@st.composite
def group_specs(draw, name):
    builder = (
        a_group(name)
        .with_placement(
            mode=draw(st.sampled_from(["atomic", "reserve"])),
            max_attempts=draw(st.sampled_from([None, 1, 2, 3])),  # None: no limit
            timeout="60s",
            backoff="5s",
            backoff_max="20s",
        )
        .with_barrier("90s")
    )
    builder.with_member(
        "trainer",
        tasks=draw(st.integers(1, 3)),
        claims=draw(st.sampled_from([(), ("gpus",), ("gpus", "data")])),
    )
    replicas = draw(st.integers(1, 4))
    min_start = draw(st.integers(1, replicas))
    builder.with_member(
        "rollout",
        replicas=replicas,
        min_start=min_start,
        min_running=draw(st.integers(1, min_start)),
        claims=draw(st.sampled_from([(), ("gpus",)])),
    )
    jobs = ["trainer"]
    if draw(st.booleans()):
        builder.with_member("reward", tasks=1)
        jobs.append("reward")
    for _ in range(draw(st.integers(0, 3))):
        builder.with_rule(
            draw(st.sampled_from(ACTIONS)),
            members=draw(st.sampled_from([(), ("rollout",), ("trainer",)])),
            reasons=draw(
                st.sampled_from(
                    [("any",), ("error",), ("node-lost", "preempted"), ("oom", "claim-failed")]
                )
            ),
            max_restarts=draw(st.sampled_from([2, 1, 3, 0])),
        )
    builder.with_failure(
        default=draw(st.sampled_from(ACTIONS)), max_group_restarts=draw(st.sampled_from([1, 2, 0]))
    )
    when = draw(st.sampled_from(["all-jobs", "any-job", "members"]))
    named = tuple(draw(st.sampled_from([jobs, jobs[:1], jobs[-1:]])))
    builder.with_success(when, named if when == "members" else ())
    return builder.build()


def rarely(one_in: int) -> st.SearchStrategy[bool]:
    """A rule that would end or stall groups too often acts only when this draws False
    (hypothesis favours the simplest value, 0, so "skip" must be the non-zero one)."""
    return st.integers(0, one_in - 1).map(lambda n: n != one_in - 1)


def ref(group: GroupState | str, member: MemberState) -> str:
    return f"{group if isinstance(group, str) else group.name}/{member.name}"


class ControllerMachine(RuleBasedStateMachine):
    def store_env(self) -> dict[str, str]:
        return {"COSTART_SNAPSHOT_EVERY": "9"}  # the library's in-memory store

    @initialize()
    def start(self):
        self.clock = ManualClock()
        self.controller = Controller(env=self.store_env(), clock=self.clock)
        self.audit = EventAudit()
        self.model = PolicyModel()
        self.ready_claims: dict[tuple[str, str], set[str]] = {}
        self.barrier: dict[str, bool] = {}
        self.node_seq = 0

    # --- what the rules may act on ------------------------------------------------

    def live(self, *statuses: str) -> list[GroupState]:
        """Live groups (in submission order), those in ``statuses`` if any are given."""
        if not hasattr(self, "controller"):
            return []
        groups = self.controller.world.live_groups()
        return [g for g in groups if not statuses or g.status in statuses]

    def members_where(
        self, groups: list[GroupState], keep: Callable[[MemberState], bool]
    ) -> list[tuple[GroupState, MemberState]]:
        world = self.controller.world
        return [(g, m) for g in groups for m in world.members_of(g) if keep(m)]

    def started(self) -> list[GroupState]:
        return self.live(*GROUP_STARTED)

    def free_names(self) -> list[str]:
        if not hasattr(self, "controller"):
            return []
        return [n for n in NAMES if n not in self.controller.world.live_names]

    def used_nodes(self) -> list[str]:
        return sorted(
            {
                a.node
                for g in self.live()
                for m in self.controller.world.members_of(g)
                for a in (*m.held, *m.assignments)
            }
        )

    def fresh_nodes(self, indexes: list[int]) -> tuple[Assignment, ...]:
        self.node_seq += 1
        return tuple(Assignment(i, f"s{self.node_seq}-{i}") for i in indexes)

    # --- running a command --------------------------------------------------------

    def run(self, kind: str, label: str, command: Callable[[], list[ev.DomainEvent]]):
        """Run a command; a refusal must leave the log and the state untouched."""
        controller = self.controller
        before_log = controller.recorder.max_notification_id()
        before_state = canonical_encode(controller.world)
        before = {
            m.id.int: (m.status, [a.index for a in m.assignments])
            for m in controller.world.members.values()
        }
        try:
            events = command()
        except DomainError as error:
            TALLY[f"refused:{kind}"] += 1
            note(f"{label}: refused ({error})")
            assert controller.recorder.max_notification_id() == before_log
            assert canonical_encode(controller.world) == before_state
            return None
        TALLY[f"ran:{kind}"] += 1
        note(f"{label}: {[type(e).__name__ for e in events]}")
        for event in events:
            TALLY[f"event:{type(event).__name__}"] += 1
            if isinstance(event, ev.MemberFailed):
                TALLY[f"action:{event.action}"] += 1
        self.observe(events)
        self.model.observe([e for e in events if not isinstance(e, ev.NodeStatusChanged)], before)
        return events

    def observe(self, events):
        world = self.controller.world
        for event in events:
            self.audit.observe(event)
            if isinstance(event, ev.NodeStatusChanged):
                continue
            group = world.group_by_id(event.group_id).name
            if isinstance(event, ev.MemberPlaced | ev.MemberReleased | ev.MemberRestarted):
                member = world.member_by_id(event.originator_id).name
                self.ready_claims[(group, member)] = set()
            elif isinstance(event, ev.ClaimReady):
                member = world.member_by_id(event.originator_id).name
                self.ready_claims.setdefault((group, member), set()).add(event.claim)
            elif isinstance(event, ev.BarrierReleased):
                g = self.controller.group(group)
                for m in self.controller.members(group):
                    assert self.ready_claims.get((group, m.name), set()) >= set(m.spec.claims), (
                        f"barrier released for {group} but {m.name} claims not all READY"
                    )
                    assert len(m.assignments) >= m.spec.min_start
                assert event.attempt == g.attempt
                self.barrier[group] = True
            elif isinstance(event, ev.PlacementReleased | ev.GroupSubmitted):
                self.barrier[group] = False

    def accepted(self, kind, label, command):
        events = self.run(kind, label, command)
        assert events is not None, f"{label} was refused"
        return events

    def refused(self, kind, label, command):
        assert self.run(kind, label, command) is None, f"{label} was accepted"

    # --- placement ----------------------------------------------------------------

    @precondition(lambda self: self.free_names())
    @rule(data=st.data())
    def submit(self, data):
        name = data.draw(st.sampled_from(self.free_names()))
        spec = data.draw(group_specs(name))
        self.accepted("submit", f"submit {name}", lambda: self.controller.submit_events(spec)[1])

    @precondition(lambda self: self.live("PENDING", "RESERVING"))
    @rule(data=st.data(), partial=st.integers(0, 5))
    def place_group(self, data, partial):
        group = data.draw(st.sampled_from(self.live("PENDING", "RESERVING")))
        self.node_seq += 1
        assignments = {
            m.name: tuple(Assignment(i, f"r{self.node_seq}-{m.name}-{i}") for i in range(m.desired))
            for m in self.controller.members(group.name)
        }
        if partial == 0:  # one member short of its gang: refused
            first = group.spec.members[0].name
            decision = PlaceGroup(group.name, {**assignments, first: ()})
            self.refused("place", f"place {group.name} (partial)", self.decide(decision))
            return
        decision = PlaceGroup(group.name, assignments)
        label = f"place {group.name}"
        if all(m.desired >= m.spec.min_start for m in self.controller.members(group.name)):
            self.accepted("place", label, self.decide(decision))
        else:  # scaled below its start quorum before the start: cannot be placed
            self.refused("place", label, self.decide(decision))

    def decide(self, decision):
        return lambda: self.controller.apply_decisions([decision])

    def can_hold(self) -> list[tuple[GroupState, MemberState]]:
        waiting = [
            g for g in self.live("PENDING", "RESERVING") if g.spec.placement.mode == "reserve"
        ]
        return self.members_where(waiting, lambda m: len(m.held) < m.desired)

    @precondition(lambda self: self.can_hold())
    @rule(data=st.data(), gate=rarely(2))
    def hold(self, data, gate):
        if gate:
            return
        group, member = data.draw(st.sampled_from(self.can_hold()))
        held = {a.index for a in member.held}
        index = min(i for i in range(member.desired) if i not in held)
        decision = HoldCapacity(group.name, {member.name: self.fresh_nodes([index])})
        self.accepted("hold", f"hold {ref(group, member)}[{index}]", self.decide(decision))

    @precondition(lambda self: self.live("RESERVING", "PLACED"))
    @rule(data=st.data(), gate=rarely(4))
    def release(self, data, gate):
        if gate:
            return
        group = data.draw(st.sampled_from(self.live("RESERVING", "PLACED")))
        decision = ReleaseGroup(group.name, "test")
        self.accepted("release", f"release {group.name}", self.decide(decision))

    # --- claims and the start -----------------------------------------------------

    def pending_claims(self) -> list[tuple[str, str]]:
        pairs = self.members_where(self.live(), lambda m: m.status == "PLACED")
        return [(ref(g, m), c) for g, m in pairs for c, s in m.claims.items() if s == "PENDING"]

    @precondition(lambda self: self.pending_claims())
    @rule(data=st.data())
    def claim_ready(self, data):
        member, claim = data.draw(st.sampled_from(self.pending_claims()))
        self.accepted(
            "claim_ready",
            f"claim_ready {member} {claim}",
            lambda: ready(self.controller, member, claim),
        )

    def failable_claims(self) -> list[tuple[str, str]]:
        pairs = self.members_where(self.live(), lambda m: m.status in ("PLACED", "READY"))
        return [(ref(g, m), c) for g, m in pairs for c in m.claims]

    @precondition(lambda self: self.failable_claims())
    @rule(data=st.data(), gate=rarely(8))
    def claim_failed(self, data, gate):
        if gate:
            return
        member, claim = data.draw(st.sampled_from(self.failable_claims()))
        self.accepted(
            "claim_failed",
            f"claim_failed {member} {claim}",
            lambda: claim_fail(self.controller, member, claim, "x"),
        )

    def startable(self) -> list[tuple[GroupState, MemberState]]:
        return self.members_where(self.started(), lambda m: m.status == "READY")

    @precondition(lambda self: self.startable())
    @rule(data=st.data())
    def start_member(self, data):
        group, member = data.draw(st.sampled_from(self.startable()))
        target = ref(group, member)
        assert self.barrier.get(group.name, False)
        assert self.controller.may_start(target)
        self.accepted("start", f"start {target}", lambda: start(self.controller, target))

    @precondition(lambda self: self.live("PENDING", "RESERVING", "PLACED"))
    @rule(data=st.data(), gate=rarely(4))
    def start_before_the_barrier(self, data, gate):
        if gate:
            return
        group = data.draw(st.sampled_from(self.live("PENDING", "RESERVING", "PLACED")))
        member = data.draw(st.sampled_from(self.controller.members(group.name)))
        target = ref(group, member)
        assert not self.controller.may_start(target)
        self.refused("start", f"start {target} early", lambda: start(self.controller, target))

    # --- after the start ----------------------------------------------------------

    def failable(self) -> list[tuple[GroupState, MemberState]]:
        return self.members_where(
            self.started(), lambda m: m.status in ("PLACED", "READY", "RUNNING")
        )

    @precondition(lambda self: self.failable())
    @rule(data=st.data(), reason=st.sampled_from(REASONS), one_replica=st.booleans())
    def fail(self, data, reason, one_replica):
        group, member = data.draw(st.sampled_from(self.failable()))
        index = (
            data.draw(st.sampled_from([a.index for a in member.assignments]))
            if one_replica and member.assignments and member.spec.kind == "replica-set"
            else None
        )
        target = ref(group, member)
        self.accepted(
            f"fail:{reason}",
            f"fail {target} {reason} replica={index}",
            lambda: fail(self.controller, target, reason, 1, index),
        )

    def running_jobs(self) -> list[tuple[GroupState, MemberState]]:
        # A job succeeds task by task: only one with a running task can report one.
        return self.members_where(
            self.started(),
            lambda m: (
                m.status == "RUNNING"
                and m.spec.kind == "job"
                and any(t.status == "RUNNING" for t in m.tasks)
            ),
        )

    @precondition(lambda self: self.running_jobs())
    @rule(data=st.data())
    def succeed(self, data):
        group, member = data.draw(st.sampled_from(self.running_jobs()))
        target = ref(group, member)
        self.accepted("succeed", f"succeed {target}", lambda: succeed(self.controller, target))

    def replica_sets(self) -> list[tuple[GroupState, MemberState]]:
        return self.members_where(self.live(), lambda m: m.spec.kind == "replica-set")

    @precondition(lambda self: self.replica_sets())
    @rule(data=st.data(), gate=rarely(3))
    def scale(self, data, gate):
        if gate:
            return
        group, member = data.draw(st.sampled_from(self.replica_sets()))
        replicas = data.draw(st.integers(member.spec.min_running - 1, member.spec.count + 2))
        target = ref(group, member)
        label = f"scale {target} {replicas}"
        command = lambda: self.controller.scale(target, replicas, actor=USER)  # noqa: E731
        if replicas < member.spec.min_running or member.status in (
            "SUCCEEDED",
            "FAILED",
            "STOPPED",
        ):
            self.run("scale", label, command)  # below the floor or ended: may be refused
        else:
            self.accepted("scale", label, command)
        # A scale-up of a running replica set is the usual way a member becomes placeable
        # alone, and the timer rules place it before `place_member` is often drawn: place it
        # by hand here, sometimes, so that phase is reached whatever the draw stream.
        grown = [pm for pm in self.placeable_alone() if pm[1].name == member.name]
        if grown and grown[0][0].name == group.name and data.draw(st.booleans()):
            self.place_by_hand(data, *grown[0])

    def placeable_alone(self) -> list[tuple[GroupState, MemberState]]:
        return self.members_where(
            self.started(),
            lambda m: (
                m.status == "RESTARTING"
                or (
                    m.status == "RUNNING"
                    and m.spec.kind == "replica-set"
                    and len(m.assignments) < m.desired
                )
            ),
        )

    @precondition(lambda self: self.placeable_alone())
    @rule(data=st.data())
    def place_member(self, data):
        self.place_by_hand(data, *data.draw(st.sampled_from(self.placeable_alone())))

    def place_by_hand(self, data, group: GroupState, member: MemberState) -> None:
        taken = {a.index for a in member.assignments}
        free = [i for i in range(member.desired) if i not in taken]
        count = data.draw(st.integers(1, len(free)))
        decision = PlaceMember(group.name, member.name, self.fresh_nodes(free[:count]))
        self.accepted(
            "place_member",
            f"place_member {ref(group, member)} {free[:count]}",
            self.decide(decision),
        )

    # --- the end, the cluster, time ---------------------------------------------------

    @precondition(lambda self: self.live())
    @rule(data=st.data(), gate=rarely(8))
    def cancel(self, data, gate):
        if gate:
            return
        group = data.draw(st.sampled_from(self.live()))
        self.accepted(
            "cancel", f"cancel {group.name}", lambda: self.controller.cancel(group.name, actor=USER)
        )

    @precondition(lambda self: self.used_nodes())
    @rule(data=st.data(), gate=rarely(3))
    def node_down(self, data, gate):
        if gate:
            return
        node = data.draw(st.sampled_from(self.used_nodes()))
        events = self.accepted(
            "node_down",
            f"node_down {node}",
            lambda: self.controller.set_node_status(node, "down", actor=HOST),
        )
        for e in events:
            if isinstance(e, ev.MemberFailed):
                assert e.reason == "node-lost"
        assert not any(
            a.node == node and m.status == "RUNNING"
            for m in self.controller.world.members.values()
            for a in m.assignments
        )

    @precondition(lambda self: hasattr(self, "controller") and self.controller.world.node_status)
    @rule(data=st.data(), status=st.sampled_from(["up", "drained"]), gate=rarely(2))
    def node_report(self, data, status, gate):
        if gate:
            return
        node = data.draw(st.sampled_from(sorted(self.controller.world.node_status)))
        self.run(
            "node_report",
            f"node {node} {status}",
            lambda: self.controller.set_node_status(node, status, actor=HOST),
        )
        assert self.controller.world.node_status.get(node, "up") == status

    @rule(seconds=st.sampled_from([1, 1, 5, 30, 61, 95]), gate=rarely(4))
    def tick(self, seconds, gate):
        if gate:
            return
        now = self.clock.advance(seconds)
        self.run("tick", f"tick +{seconds}s", lambda: self.controller.tick(now))

    @precondition(lambda self: self.live("RESERVING"))
    @rule(data=st.data(), gate=rarely(2))
    def reservation_expires(self, data, gate):
        """Time runs out on an open reservation: a tick at its deadline times it out.
        (Without it, fresh seed 3432798431 reached no ReservationTimedOut: the other rules
        place or release most reservations before a random tick reaches their deadline.)"""
        if gate:
            return
        group = data.draw(st.sampled_from(self.live("RESERVING")))
        deadline = group.reservation_deadline_ns
        assert deadline is not None, f"{group.name} is RESERVING without a deadline"
        self.clock.now_ns = now = max(self.clock.now_ns, deadline)
        label = f"tick to {group.name}'s reservation deadline"
        events = self.run("tick", label, lambda: self.controller.tick(now))
        assert any(
            isinstance(e, ev.ReservationTimedOut) and e.group_id == group.id for e in events or ()
        ), f"{group.name}'s reservation did not time out at its deadline"

    # --- commands that must be refused ----------------------------------------------

    @precondition(lambda self: self.live())
    @rule(data=st.data(), which=st.integers(0, 3), gate=rarely(2))
    def refused_command(self, data, which, gate):
        if gate:
            return
        group = data.draw(st.sampled_from(self.live()))
        member = data.draw(st.sampled_from(self.controller.members(group.name)))
        target = ref(group, member)
        c = self.controller
        if which == 0 and group.status not in GROUP_STARTED:
            self.refused(
                "fail", f"fail {target} before the start", lambda: fail(c, target, "error")
            )
        elif which == 1 and member.spec.kind == "replica-set":
            self.refused("succeed", f"succeed replica-set {target}", lambda: succeed(c, target))
        elif which == 2 and member.spec.kind == "job":
            self.refused("scale", f"scale job {target}", lambda: c.scale(target, 2, actor=USER))
        elif which == 3:
            self.refused("claim_ready", f"claim {target} nope", lambda: ready(c, target, "nope"))

    # --- replay ---------------------------------------------------------------------

    @precondition(lambda self: hasattr(self, "controller"))
    @rule(gate=rarely(3))
    def replay_matches_live_state(self, gate):
        """Byte-exact replay: from scratch, from the newest snapshot, and at the newest
        snapshot's position against the snapshot's own bytes."""
        if gate:
            return
        source = RecorderSource(self.controller.recorder)
        live = canonical_encode(self.controller.world)
        assert canonical_encode(rebuild(source)) == live
        restored, snapshot, skipped = restore(self.controller.session.snapshots_store, source)
        assert skipped == [] and canonical_encode(restored) == live
        if snapshot is not None:
            assert encode_state(rebuild(source, until=snapshot.position)) == snapshot.state

    @invariant()
    def invariants_hold(self):
        if hasattr(self, "controller"):
            check_world(self.controller.world)
            check_node_use(self.controller.world)


PROFILE = os.environ.get("COSTART_PROFILE", "ci")
SLOW = PROFILE == "slow"
# `make mutate` runs the suite once per mutant: a few short sequences each.
MUTATE = PROFILE == "mutate"

# The least every run must reach: accepted commands per kind, and events per type. Set
# from fresh-seed runs (`make test-explore`), whose counts vary more than CI's fixed
# seeds: about half the smallest count seen there, so a floor proves the phase was
# reached without failing on an unlucky draw.
MIN_ACCEPTED = {
    "submit": 150,
    "place": 150,
    "hold": 50,
    "release": 15,
    "claim_ready": 100,
    "claim_failed": 8,
    "start": 50,
    "fail:error": 8,
    "fail:oom": 2,
    # Fresh seeds 11, 22, 33, 44 and 3432798431 (with reservation_expires): node-lost
    # failures 3-53, member restarts 7-21; the floors are half the smallest.
    "fail:node-lost": 1,
    "fail:preempted": 4,
    "fail:claim-failed": 4,
    "succeed": 6,
    "scale": 70,
    "place_member": 5,
    "cancel": 12,
    "node_down": 50,
    "tick": 300,
}
MIN_EVENTS = {
    "ClaimReady": 100,
    "BarrierReleased": 60,
    "MemberStarted": 50,
    "MemberFailed": 60,
    "MemberRestarted": 3,
    "GroupRestarted": 8,
    "MemberScaled": 70,
    "MemberSucceeded": 6,
    # Fresh seed 3689664831 (`make test-explore`) reached it once in 200 sequences (14
    # jobs succeeded, most in groups whose success needs every job): the phase is proven
    # by reaching it, and its fresh-seed tail goes down to one.
    "GroupSucceeded": 1,
    "GroupFailed": 40,
    "GroupDegraded": 4,  # per-task reports: one replica lost at a time, degrading less often
    "ReservationTimedOut": 10,  # reservation_expires: 29 or more in six seeds
    "ClaimFailed": 8,
}


def run_machine(machine: type[ControllerMachine], examples: int, steps: int) -> Counter[str]:
    """Run the machine; the tally of commands and events, printed."""
    TALLY.clear()
    profile = settings()  # the loaded profile: fixed seeds in CI, fresh ones when exploring
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=profile.derandomize,
            database=profile.database,
        ),
    )
    lines = [f"stateful run ({machine.__name__}), {examples} examples of up to {steps} steps:"]
    for kind in ("ran", "refused", "event", "action"):
        counts = sorted((k.split(":", 1)[1], n) for k, n in TALLY.items() if k.startswith(kind))
        lines.append(f"  {kind}: " + ", ".join(f"{name} {n}" for name, n in counts))
    REPORTS.append("\n".join(lines))
    print("\n".join(lines))
    return TALLY.copy()


def test_random_command_sequences_reach_every_phase_and_keep_every_invariant():
    NODE_USE_CHECKS.clear()
    # 400 sequences, not 200: with a newer hypothesis the fixed seed's first 200 sequences
    # reached no reservation timeout and 61 claims READY (seed 22 of `make test-explore`
    # no OOM): one half of a run varies that much between generator versions; the floors
    # hold on the whole with margin (ReservationTimedOut 32 of 10, ClaimReady 417 of 100).
    tally = run_machine(ControllerMachine, 25 if MUTATE else 1000 if SLOW else 400, 100)
    scale = 5 if SLOW else 0 if MUTATE else 1
    short = {
        kind: tally[f"ran:{kind}"]
        for kind, least in MIN_ACCEPTED.items()
        if tally[f"ran:{kind}"] < least * scale
    }
    short |= {
        kind: tally[f"event:{kind}"]
        for kind, least in MIN_EVENTS.items()
        if tally[f"event:{kind}"] < least * scale
    }
    assert not short, f"phases reached too rarely: {short}"
    refused = sum(n for key, n in tally.items() if key.startswith("refused:"))
    assert refused >= 100 * scale, f"only {refused} commands were refused"
    # The use per node was compared with a recount after every step, mostly as kept.
    print(f"use per node compared: {dict(NODE_USE_CHECKS)}")
    assert NODE_USE_CHECKS["kept"] > 10 * NODE_USE_CHECKS["counted afresh"]


class LmdbControllerMachine(ControllerMachine):
    """The same machine on the LMDB store: pipelined appends, fail-stop writer, real
    snapshots. Each example gets a fresh store directory."""

    def store_env(self) -> dict[str, str]:
        self.directory = tempfile.mkdtemp(prefix="costart-stateful-")
        return {
            "PERSISTENCE_MODULE": "costart.store",
            "COSTART_LMDB_PATH": self.directory,
            "COSTART_LMDB_DURABILITY": "async",
            "COSTART_SNAPSHOT_EVERY": "9",
        }

    def teardown(self) -> None:
        if hasattr(self, "controller"):
            self.controller.close()
            shutil.rmtree(self.directory, ignore_errors=True)


def test_random_command_sequences_on_the_lmdb_store():
    tally = run_machine(LmdbControllerMachine, 5 if MUTATE else 300 if SLOW else 60, 60)
    # The store under the same commands (pipelined appends, snapshots, replay): the
    # phase floors are the in-memory machine's; here, that plenty of commands ran.
    ran = sum(n for key, n in tally.items() if key.startswith("ran:"))
    assert MUTATE or ran >= 300, f"only {ran} commands ran"
