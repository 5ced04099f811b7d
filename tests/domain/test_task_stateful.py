"""A hypothesis state machine drives per-task reports: current, late (an earlier
attempt) and repeated ones (a report sent again), with placements, restarts, node losses
and timeouts between them.

After every step: every invariant holds over the state and the new events; a report the
controller called repeated or stale, or refused, wrote nothing and changed nothing; a
report about an attempt older than its task's is never applied; a sent-again report is
never applied twice; and the log replays to the same state.
"""

from __future__ import annotations

import os

from hypothesis import note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from costart.controller import Controller, ReportResult
from costart.domain.actors import Actor
from costart.domain.decisions import PlaceMember
from costart.domain.errors import DomainError
from costart.domain.events import Assignment
from costart.domain.invariants import EventAudit, check_world
from costart.eventlog.codec import canonical_encode
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import USER, ManualClock, a_group, full_placement
from tests.domain.node_use_check import CHECKS as NODE_USE_CHECKS
from tests.domain.node_use_check import check_node_use

HOST = Actor.host("claims")
# `make mutate` runs this once per mutant that reaches it: fewer sequences.
MUTATE = os.environ.get("COSTART_PROFILE") == "mutate"
# `make test-explore`: fresh seeds; with 50 sequences seed 3689664831 reached no
# MemberRestarted (a restart needs the restart-member action drawn and a failure after
# the start), so fresh seeds get twice as many.
EXPLORE = os.environ.get("COSTART_PROFILE") == "explore"
MEMBERS = ("trainer", "svc")
REASONS = ("error", "oom", "node-lost", "preempted")
SEEN: set[str] = set()  # outcomes and event names the reports produced (the coverage proof)


def _spec(action: str, success: str):
    return (
        a_group("g1")
        .with_placement(mode="atomic", backoff="1s", backoff_max="4s")  # no attempt limit
        .with_barrier("60s")
        .with_member("trainer", tasks=3, claims=("gpus",))
        .with_member("svc", replicas=3, min_start=2, min_running=1, claims=("cache",))
        .with_rule("restart-member", members=("svc",), reasons=("error", "oom"), max_restarts=4)
        .with_failure(default=action, max_group_restarts=2)
        .with_success(success)
        .build()
    )


class TaskReportMachine(RuleBasedStateMachine):
    sent = Bundle("sent")

    @initialize(
        action=st.sampled_from(["restart-member", "restart-group", "tolerate", "fail-group"]),
        success=st.sampled_from(["all-jobs", "any-job"]),
    )
    def setup(self, action, success):
        self.clock = ManualClock()
        self.controller = Controller(clock=self.clock)
        self.audit = EventAudit()
        self.node_seq = 0
        spec = _spec(action, success)
        note(f"spec: default {action}, success {success}")
        self._observe(list(self._events_of(lambda: self.controller.submit(spec, actor=USER))))

    # --- helpers ------------------------------------------------------------------

    def _events_of(self, command):
        before = self.controller.world.position
        command()
        return [e for _, e in self.controller.read_events(before)]

    def _observe(self, events):
        for event in events:
            self.audit.observe(event)

    def _member(self, name):
        return self.controller.world.member_named(self.controller.group("g1"), name)

    def _send(self, report):
        """Send ``report``: (kind, member, what, attempt). Returns the ReportResult or None if
        refused; a refusal, like a repeated or stale report, changes nothing."""
        kind, member, what, attempt = report
        ref = f"g1/{member}"
        c = self.controller
        before = (c.world.position, canonical_encode(c.world))
        agent = Actor.agent("node")
        try:
            if kind == "started":
                result = c.task_started(ref, what, attempt, actor=agent)
            elif kind == "succeeded":
                result = c.task_succeeded(ref, what, attempt, actor=agent)
            elif kind.startswith("failed:"):
                reason = kind.removeprefix("failed:")
                result = c.task_failed(ref, what, attempt, reason, exit_code=1, actor=agent)  # type: ignore[arg-type]
            elif kind == "ready":
                result = c.claim_ready(ref, what, attempt, actor=HOST)
            else:
                result = c.claim_failed(ref, what, attempt, "lost", actor=HOST)
        except DomainError as error:
            SEEN.add("refused")
            note(f"{report}: refused ({error})")
            assert (c.world.position, canonical_encode(c.world)) == before
            return None
        note(
            f"{report}: {result.outcome} {result.detail} {[type(e).__name__ for e in result.events]}"
        )
        SEEN.add(result.outcome)
        SEEN.update(type(e).__name__ for e in result.events)
        if result.outcome == "applied":
            assert result.events and c.world.position == before[0] + len(result.events)
            self._observe(list(result.events))
        else:
            assert result.events == ()
            assert (c.world.position, canonical_encode(c.world)) == before
        return result

    # --- the host's reports ---------------------------------------------------------

    @rule(
        target=sent,
        member=st.sampled_from(MEMBERS),
        pick=st.integers(0, 5),
        back=st.sampled_from([0, 0, 0, 1, 2]),
        kind=st.sampled_from(
            ["started"] * 4 + ["succeeded"] * 3 + [f"failed:{r}" for r in REASONS]
        ),
    )
    def task_report(self, member, pick, back, kind):
        state = self._member(member)
        if not state.tasks or (kind == "succeeded" and state.spec.kind != "job"):
            return multiple()
        task = state.tasks[pick % len(state.tasks)]
        report = (kind, member, task.index, task.attempt - back)
        result: ReportResult | None = self._send(report)
        if back and result is not None:
            assert result.outcome == "stale", "a report about an earlier attempt was applied"
        return report if result is not None and result.outcome == "applied" else multiple()

    @rule(
        target=sent,
        member=st.sampled_from(MEMBERS),
        back=st.sampled_from([0, 0, 1]),
        ok=st.sampled_from([True, True, True, True, False]),
    )
    def claim_report(self, member, back, ok):
        state = self._member(member)
        if state.attempt - back < 1:
            return multiple()
        report = (
            "ready" if ok else "claim-failed",
            member,
            state.spec.claims[0],
            state.attempt - back,
        )
        result = self._send(report)
        if back and result is not None:
            assert result.outcome == "stale"
        return report if result is not None and result.outcome == "applied" else multiple()

    @rule(target=sent, pick=st.integers(0, 20))
    def progress(self, pick):
        """The host's next natural report for the current attempt: a claim READY, a
        task started, or (a job's) task exited 0. Keeps the machine moving forward."""
        candidates = []
        for name in MEMBERS:
            state = self._member(name)
            if state.status == "PLACED":
                pending = [c for c, v in state.claims.items() if v == "PENDING"]
                candidates += [("ready", name, c, state.attempt) for c in pending]
            for task in state.tasks:
                if task.attempt != state.attempt:
                    continue
                if task.status == "PLACED" and self.controller.may_start(f"g1/{name}"):
                    candidates.append(("started", name, task.index, task.attempt))
                elif task.status == "RUNNING" and state.spec.kind == "job":
                    candidates.append(("succeeded", name, task.index, task.attempt))
        if not candidates:
            self.place()
            return multiple()
        report = candidates[pick % len(candidates)]
        result = self._send(report)
        assert result is not None and result.outcome == "applied", (report, result)
        return report

    @rule(report=sent)
    def send_again(self, report):
        result = self._send(report)
        assert result is None or result.outcome in ("repeated", "stale"), "applied twice"

    # --- what happens around the reports ----------------------------------------------

    @rule()
    def place(self):
        group = self.controller.group("g1")
        if group.is_terminal:
            return
        if group.status == "PENDING":
            self.clock.now_ns = max(self.clock.now_ns, group.retry_at_ns)
            self.node_seq += 1
            decision = full_placement(group.spec, rack=f"r{self.node_seq}")
        else:
            decision = None
            for name in MEMBERS:
                state = self._member(name)
                taken = {a.index for a in state.assignments}
                missing = [i for i in range(state.desired) if i not in taken]
                if state.status in ("RESTARTING", "RUNNING") and missing:
                    self.node_seq += 1
                    tasks = tuple(Assignment(i, f"s{self.node_seq}-{i}") for i in missing)
                    decision = PlaceMember("g1", name, tasks)
                    break
            if decision is None:
                return
        try:
            events = self._events_of(lambda: self.controller.apply_decisions([decision]))
        except DomainError as error:
            note(f"place refused: {error}")
            return
        note(f"place: {[type(e).__name__ for e in events]}")
        self._observe(events)

    @rule(seconds=st.sampled_from([1, 1, 5, 30, 90]))
    def tick(self, seconds):
        self.clock.advance(seconds)
        self._observe(self.controller.tick())

    @precondition(lambda self: self.controller.world.position < 400)
    @rule(pick=st.integers(0, 100))
    def node_down(self, pick):
        used = sorted({a.node for m in self.controller.members("g1") for a in m.assignments})
        if used and pick < 25:  # now and then: a loss mostly ends what the reports build
            node = used[pick % len(used)]
            self._observe(self.controller.set_node_status(node, "down", actor=Actor.host("nodes")))

    # --- what must hold after every step ---------------------------------------------

    @invariant()
    def invariants_hold(self):
        if hasattr(self, "controller"):
            check_world(self.controller.world)
            check_node_use(self.controller.world)

    def teardown(self):
        if hasattr(self, "controller"):
            rebuilt = rebuild(RecorderSource(self.controller.recorder))
            assert canonical_encode(rebuilt) == canonical_encode(self.controller.world)


def test_per_task_reports_late_and_repeated_keep_the_state_right():
    SEEN.clear()
    NODE_USE_CHECKS.clear()
    run_state_machine_as_test(
        TaskReportMachine,
        settings=settings(
            max_examples=25 if MUTATE else 100 if EXPLORE else 50,
            stateful_step_count=60,
            deadline=None,
        ),
    )
    # The machine reached what it is for: every outcome, and groups that ended by tasks.
    assert {"applied", "repeated", "stale", "refused"} <= SEEN, sorted(SEEN)
    print(f"use per node compared: {dict(NODE_USE_CHECKS)}")
    assert NODE_USE_CHECKS["kept"] > 10 * NODE_USE_CHECKS["counted afresh"]
    assert {"TaskStarted", "TaskSucceeded", "MemberSucceeded", "MemberRestarted"} <= SEEN, sorted(
        SEEN
    )
