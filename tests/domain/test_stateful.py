"""A hypothesis state machine drives the Controller with random valid and invalid commands.

After every step: the invariant checker holds over the whole state and the new events;
a refused command wrote nothing and changed nothing; and a trivially simple model of the
barrier (which claims were reported READY since each member's last placement) agrees
with what the Controller says about `may_start` and `BarrierReleased`. Now and then the
log is replayed into a fresh Controller, whose state must encode to the same bytes.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from costart.app import Controller
from costart.domain import events as ev
from costart.domain.decisions import HoldCapacity, PlaceGroup, PlaceMember, ReleaseGroup
from costart.domain.errors import DomainError
from costart.domain.events import Assignment
from costart.domain.invariants import EventAudit, check_world
from costart.replay.rebuild import rebuild, restore
from costart.replay.source import RecorderSource
from costart.store.codec import canonical_encode
from tests.builders import (
    HOST,
    USER,
    ManualClock,
    a_group,
    claim_fail,
    fail,
    full_placement,
    ready,
    start,
    succeed,
)

NAMES = ("g1", "g2", "g3")
REASONS = ("error", "oom", "node-lost", "preempted", "claim-failed")
COMMANDS: list[str] = []  # every command the machine ran (the step-count proof)
ACTIONS = ("fail-group", "restart-member", "restart-group", "tolerate")


@st.composite
def group_specs(draw, name):
    builder = (
        a_group(name)
        .with_placement(
            mode=draw(st.sampled_from(["atomic", "reserve"])),
            max_attempts=draw(st.integers(0, 3)),
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
    if draw(st.booleans()):
        builder.with_member("reward", replicas=1)
    for _ in range(draw(st.integers(0, 3))):
        builder.with_rule(
            draw(st.sampled_from(ACTIONS)),
            members=draw(st.sampled_from([(), ("trainer",), ("rollout",)])),
            reasons=draw(
                st.sampled_from(
                    [("any",), ("error",), ("node-lost", "preempted"), ("oom", "claim-failed")]
                )
            ),
            max_restarts=draw(st.integers(0, 2)),
        )
    builder.with_failure(
        default=draw(st.sampled_from(ACTIONS)), max_group_restarts=draw(st.integers(0, 2))
    )
    builder.with_success(draw(st.sampled_from(["all-jobs", "any-job"])))
    return builder.build()


class ControllerMachine(RuleBasedStateMachine):
    def store_env(self) -> dict[str, str]:
        return {"COSTART_SNAPSHOT_EVERY": "9"}  # the library's in-memory store

    @initialize()
    def start(self):
        self.clock = ManualClock()
        self.controller = Controller(env=self.store_env(), clock=self.clock)
        self.audit = EventAudit()
        self.ready_claims: dict[tuple[str, str], set[str]] = {}
        self.barrier: dict[str, bool] = {}
        self.node_seq = 0
        self.steps = 0

    # --- helpers ------------------------------------------------------------------

    def _live(self, name):
        return name in self.controller.world.live_names

    def _run(self, label, command):
        """Run a command; a refusal must leave the log and the state untouched."""
        COMMANDS.append(label)
        before_log = self.controller.recorder.max_notification_id()
        before_state = canonical_encode(self.controller.world)
        try:
            events = command()
        except DomainError as error:
            COMMANDS.append(f"!{label}")
            note(f"{label}: refused ({error})")
            assert self.controller.recorder.max_notification_id() == before_log
            assert canonical_encode(self.controller.world) == before_state
            return []
        note(f"{label}: {[type(e).__name__ for e in events]}")
        self._observe(events)
        return events

    def _observe(self, events):
        for event in events:
            self.audit.observe(event)
            if isinstance(event, ev.NodeStatusChanged):
                continue
            group = self.controller.world.group_by_id(event.group_id).name
            if isinstance(event, ev.MemberPlaced | ev.MemberReleased | ev.MemberRestarted):
                member = self.controller.world.member_by_id(event.originator_id).name
                self.ready_claims[(group, member)] = set()
            elif isinstance(event, ev.ClaimReady):
                member = self.controller.world.member_by_id(event.originator_id).name
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

    def _nodes(self, count):
        nodes = []
        for index in range(count):
            self.node_seq += 1
            nodes.append(Assignment(index, f"n{self.node_seq}"))
        return tuple(nodes)

    # --- rules --------------------------------------------------------------------

    @rule(data=st.data(), name=st.sampled_from(NAMES))
    def submit(self, data, name):
        spec = data.draw(group_specs(name))
        self._run(f"submit {name}", lambda: [*self._submit(spec)])

    def _submit(self, spec):
        before = self.controller.recorder.max_notification_id() or 0
        self.controller.submit(spec)
        return [e for _, e in self.controller.read_events(before)]

    @rule(name=st.sampled_from(NAMES), partial=st.booleans())
    def place_group(self, name, partial):
        if not self._live(name):
            return
        spec = self.controller.group(name).spec
        decision = full_placement(spec, rack=f"r{self.node_seq}")
        self.node_seq += 100
        if partial:
            first = spec.members[0].name
            decision = PlaceGroup(name, {**decision.assignments, first: ()})
        self._run(
            f"place {name}{' (partial)' if partial else ''}",
            lambda: self.controller.apply_decisions([decision]),
        )

    @rule(name=st.sampled_from(NAMES))
    def hold(self, name):
        if not self._live(name):
            return
        members = self.controller.members(name)
        holds = {m.name: self._nodes(1) for m in members[:1] if not m.held}
        self._run(
            f"hold {name}", lambda: self.controller.apply_decisions([HoldCapacity(name, holds)])
        )

    @rule(name=st.sampled_from(NAMES))
    def release(self, name):
        if self._live(name):
            self._run(
                f"release {name}",
                lambda: self.controller.apply_decisions([ReleaseGroup(name, "test")]),
            )

    @rule(
        name=st.sampled_from(NAMES),
        member=st.integers(0, 2),
        claim=st.integers(0, 1),
        ok=st.booleans(),
    )
    def claim(self, name, member, claim, ok):
        if not self._live(name):
            return
        members = self.controller.members(name)
        m = members[member % len(members)]
        if not m.spec.claims:
            return
        c = m.spec.claims[claim % len(m.spec.claims)]
        ref = f"{name}/{m.name}"
        if ok:
            self._run(f"claim_ready {ref} {c}", lambda: ready(self.controller, ref, c))
        else:
            self._run(f"claim_failed {ref} {c}", lambda: claim_fail(self.controller, ref, c, "x"))

    @rule(name=st.sampled_from(NAMES), member=st.integers(0, 2))
    def start_member(self, name, member):
        if not self._live(name):
            return
        members = self.controller.members(name)
        m = members[member % len(members)]
        ref = f"{name}/{m.name}"
        placed = any(t.status == "PLACED" and t.attempt == m.attempt for t in m.tasks)
        expected = self.barrier.get(name, False) and m.status in ("READY", "RUNNING") and placed
        assert self.controller.may_start(ref) == (
            self.barrier.get(name, False) and m.status in ("READY", "RUNNING")
        )
        events = self._run(f"start {ref}", lambda: start(self.controller, ref))
        assert bool(events) == expected

    @rule(
        name=st.sampled_from(NAMES),
        member=st.integers(0, 2),
        reason=st.sampled_from(REASONS),
        replica=st.booleans(),
    )
    def fail(self, name, member, reason, replica):
        if not self._live(name):
            return
        members = self.controller.members(name)
        m = members[member % len(members)]
        index = (
            m.assignments[0].index
            if replica and m.assignments and m.spec.kind == "replica-set"
            else None
        )
        ref = f"{name}/{m.name}"
        self._run(
            f"fail {ref} {reason} replica={index}",
            lambda: fail(self.controller, ref, reason, 1, index),
        )

    @rule(name=st.sampled_from(NAMES), member=st.integers(0, 2))
    def succeed(self, name, member):
        if not self._live(name):
            return
        members = self.controller.members(name)
        ref = f"{name}/{members[member % len(members)].name}"
        self._run(f"succeed {ref}", lambda: succeed(self.controller, ref))

    @rule(name=st.sampled_from(NAMES), member=st.integers(0, 2), replicas=st.integers(-1, 6))
    def scale(self, name, member, replicas):
        if not self._live(name):
            return
        members = self.controller.members(name)
        ref = f"{name}/{members[member % len(members)].name}"
        self._run(
            f"scale {ref} {replicas}", lambda: self.controller.scale(ref, replicas, actor=USER)
        )

    @rule(name=st.sampled_from(NAMES), member=st.integers(0, 2))
    def place_member(self, name, member):
        if not self._live(name):
            return
        members = self.controller.members(name)
        m = members[member % len(members)]
        missing = max(m.desired - len(m.assignments), 1)
        taken = {a.index for a in m.assignments}
        free = [i for i in range(m.desired + 1) if i not in taken][:missing]
        nodes = tuple(Assignment(i, f"s{self.node_seq}-{i}") for i in free)
        self.node_seq += 1
        self._run(
            f"place_member {name}/{m.name}",
            lambda: self.controller.apply_decisions([PlaceMember(name, m.name, nodes)]),
        )

    @rule(name=st.sampled_from(NAMES))
    def cancel(self, name):
        if name in self.controller.world.live_names or any(
            g.name == name for g in self.controller.groups()
        ):
            self._run(f"cancel {name}", lambda: self.controller.cancel(name, actor=USER))

    @rule(pick=st.integers(0, 1000))
    def node_down(self, pick):
        used = sorted(
            {
                a.node
                for m in self.controller.world.members.values()
                for a in (*m.held, *m.assignments)
            }
        )
        if used:
            node = used[pick % len(used)]
            events = self._run(
                f"node_down {node}", lambda: self.controller.node_down(node, actor=HOST)
            )
            for e in events:
                if isinstance(e, ev.MemberFailed):
                    assert e.reason == "node-lost"
            assert not any(
                a.node == node and m.status == "RUNNING"
                for m in self.controller.world.members.values()
                for a in m.assignments
            )

    @rule(pick=st.integers(0, 1000), status=st.sampled_from(["up", "drained"]))
    def node_report(self, pick, status):
        reported = sorted(self.controller.world.node_status)
        if reported:
            node = reported[pick % len(reported)]
            self._run(
                f"node {node} {status}",
                lambda: self.controller.set_node_status(node, status, actor=HOST),
            )
            assert self.controller.world.node_status.get(node, "up") == status

    @rule(seconds=st.sampled_from([1, 30, 61, 95]))
    def tick(self, seconds):
        now = self.clock.advance(seconds)
        self._run(f"tick +{seconds}s", lambda: self.controller.tick(now))

    @rule()
    def replay_matches_live_state(self):
        """Byte-exact replay: from scratch, from the newest snapshot, and at the newest
        snapshot's position against the snapshot's own bytes."""
        source = RecorderSource(self.controller.recorder)
        live = canonical_encode(self.controller.world)
        assert canonical_encode(rebuild(source)) == live
        restored, snapshot, skipped = restore(self.controller.snapshots_store, source)
        assert skipped == [] and canonical_encode(restored) == live
        if snapshot is not None:
            assert canonical_encode(rebuild(source, until=snapshot.position)) == snapshot.state

    @invariant()
    def invariants_hold(self):
        if hasattr(self, "controller"):
            check_world(self.controller.world)


SLOW = os.environ.get("COSTART_PROFILE") == "slow"
MIN_COMMANDS = 20_000 if SLOW else 2_000


def run_machine(machine: type[ControllerMachine], examples: int, steps: int) -> tuple[int, int]:
    """Run the machine; how many commands ran and how many of them were refused."""
    COMMANDS.clear()
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            derandomize=not SLOW,
        ),
    )
    refused = sum(1 for label in COMMANDS if label.startswith("!"))
    ran = len(COMMANDS) - refused
    print(f"stateful run ({machine.__name__}): {ran} commands, {refused} of them refused")
    return ran, refused


def test_random_command_sequences_keep_every_invariant():
    """Runs the machine and proves it executed at least MIN_COMMANDS commands."""
    ran, refused = run_machine(ControllerMachine, 2000 if SLOW else 250, 100)
    assert ran >= MIN_COMMANDS, f"only {ran} commands ran"
    assert 0 < refused < ran, "the machine must try both valid and invalid commands"


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
    ran, _ = run_machine(LmdbControllerMachine, 500 if SLOW else 100, 60)
    assert ran >= 800
