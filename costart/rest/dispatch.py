"""Reports from agents and claim drivers, made idempotent and stale-safe for the wire.

Every report names its group, member, attempt (and task or claim). Checked against the
views (a consistent, durable picture; caught up after every command) before the
Controller is called:

- an unknown group, member, task or claim is `NotFound` (404);
- a report about a terminal group or an older attempt is `Conflict` (409) naming why;
- a report that is already true (a claim already READY, a member already RUNNING) is
  answered with the current state and ``applied = false``, and writes nothing.

A report that races an identical one may reach the Controller second and be refused
there; it is then answered as a repeat, because it is one.

The attempt is the group's attempt (`GroupView.attempt`): a group restart or a release
makes earlier reports stale. Task-level runs of one member come with the attempt- and
task-stamped Controller commands of the embedding contract; this module is where their
calls go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import msgspec

from costart.app import Controller
from costart.domain import limits
from costart.domain.errors import Conflict, DomainError, NotFound, SpecError
from costart.domain.spec_types import FailureReason
from costart.domain.states import GROUP_TERMINAL
from costart.projections import GroupView, HoldView, MemberView, Views

TaskEvent = Literal["started", "exited", "succeeded"]
ClaimOutcome = Literal["READY", "FAILED"]
ExitReason = Literal["error", "oom", "preempted", "node-lost"]
NOT_STARTED = frozenset({"PENDING", "HELD", "PLACED", "READY"})


class ClaimReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A claim of a member turned READY or failed, in the group's ``attempt``."""

    attempt: int
    status: ClaimOutcome
    reason: str | None = None  # required for FAILED


class TaskReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A task of a member started, exited (with a code and a reason) or succeeded."""

    attempt: int
    event: TaskEvent
    exit_code: int | None = None
    reason: ExitReason | None = None  # required for exited


class ReportAnswer(msgspec.Struct, frozen=True):
    """``applied``: whether this report changed anything (false: it was a repeat)."""

    applied: bool
    detail: str
    member: MemberView


class Subject(msgspec.Struct, frozen=True):
    """What a report is about, as the views show it now."""

    group: GroupView
    member: MemberView
    tasks: tuple[HoldView, ...]  # the member's placed tasks (kind "used")

    @property
    def ref(self) -> str:
        return f"{self.group.name}/{self.member.name}"

    def node_of(self, task: int) -> str:
        for hold in self.tasks:
            if hold.index == task:
                return hold.node
        raise NotFound(f"member {self.ref} has no placed task {task}")

    @property
    def nodes(self) -> frozenset[str]:
        return frozenset(hold.node for hold in self.tasks)


def subject(views: Views, group: str, member: str) -> Subject:
    """The group and member a report names (`NotFound` if either is unknown)."""
    found = views.group(group)
    for row in views.members(group):
        if row.name == member:
            tasks = tuple(h for h in views.holds(group) if h.member == member and h.kind == "used")
            return Subject(found, row, tasks)
    raise NotFound(f"group {group} has no member {member!r}")


def check_current(subject: Subject, attempt: int) -> None:
    """`Conflict` for a report about a terminal group or an earlier attempt."""
    group = subject.group
    if group.state in GROUP_TERMINAL:
        raise Conflict(f"group {group.name} is {group.state}: the report changes nothing")
    if attempt != group.attempt:
        raise Conflict(
            f"stale report: attempt {attempt}, but group {group.name} is on attempt {group.attempt}"
        )


def check_claim(report: ClaimReport) -> None:
    if report.status == "FAILED" and not report.reason:
        raise SpecError("reason", "a FAILED claim needs a reason")
    if report.reason is not None and len(report.reason) > limits.MAX_REASON_TEXT:
        raise SpecError("reason", f"longer than {limits.MAX_REASON_TEXT} characters")


def check_task(report: TaskReport) -> None:
    if report.event == "exited" and report.reason is None:
        raise SpecError("reason", "an exited task needs a reason")
    if report.event != "exited" and (report.reason is not None or report.exit_code is not None):
        raise SpecError("reason", "only an exited task has a reason and an exit_code")


class Reports:
    """Applies reports through the Controller; ``refresh`` catches the views up."""

    def __init__(self, controller: Controller, views: Views, refresh: Callable[[], None]) -> None:
        self.controller = controller
        self.views = views
        self.refresh = refresh

    def claim(self, group: str, member: str, claim: str, report: ClaimReport) -> ReportAnswer:
        def done(s: Subject) -> bool:
            return s.member.claims.get(claim) == report.status

        def apply(s: Subject) -> None:
            if report.status == "READY":
                self.controller.claim_ready(s.ref, claim)
            else:
                self.controller.claim_failed(s.ref, claim, report.reason or "")

        def check(s: Subject) -> None:
            if claim not in s.member.claims:
                raise NotFound(f"member {s.ref} has no claim {claim!r}")

        return self._report(group, member, report.attempt, check, done, apply, f"claim {claim}")

    def task(self, group: str, member: str, task: int, report: TaskReport) -> ReportAnswer:
        def check(s: Subject) -> None:
            s.node_of(task)

        if task >= max(subject(self.views, group, member).member.desired, 1):
            raise NotFound(f"member {group}/{member} has no task {task}")

        def done(s: Subject) -> bool:
            state = s.member.state
            if report.event == "started":
                return state not in NOT_STARTED
            if report.event == "succeeded":
                return state == "SUCCEEDED"
            return (
                state != "RUNNING"
                and s.member.last_exit_code == report.exit_code
                and s.member.last_reason == report.reason
            )

        def apply(s: Subject) -> None:
            ref = s.ref
            if report.event == "started":
                self.controller.member_started(ref)
            elif report.event == "succeeded":
                self.controller.member_succeeded(ref)
            else:
                reason: FailureReason = report.reason or "error"
                replica = task if s.member.kind == "replica-set" else None
                self.controller.member_failed(ref, reason, report.exit_code, replica)

        return self._report(
            group, member, report.attempt, check, done, apply, f"task {task} {report.event}"
        )

    def _report(
        self,
        group: str,
        member: str,
        attempt: int,
        check: Callable[[Subject], None],
        done: Callable[[Subject], bool],
        apply: Callable[[Subject], None],
        what: str,
    ) -> ReportAnswer:
        now = subject(self.views, group, member)
        if attempt == now.group.attempt and done(now):
            # Before the other checks: the last report of a group's life (a success that
            # ended it) repeated is a repeat, not a report about a terminal group.
            return ReportAnswer(False, f"{what}: already reported", now.member)
        check(now)
        check_current(now, attempt)
        try:
            apply(now)
        except DomainError:
            self.refresh()
            again = subject(self.views, group, member)
            check_current(again, attempt)
            if done(again):  # an identical report won the race
                return ReportAnswer(False, f"{what}: already reported", again.member)
            raise
        self.refresh()
        return ReportAnswer(True, f"{what}: recorded", subject(self.views, group, member).member)
