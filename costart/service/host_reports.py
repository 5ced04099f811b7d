"""Reports from agents and claim drivers, made idempotent and stale-safe for the wire.

Every report names its group, member, attempt (and task or claim). Checked against the
views (a consistent, durable picture, holding every command answered before) before the
Controller is called:

- an unknown group, member, task or claim is `NotFound` (404);
- a report about a terminal group or an older attempt is `Conflict` (409) naming why;
- a report that is already true (a claim already READY, a member already RUNNING) is
  answered with the current state and ``applied = false``, and writes nothing.

A report that races an identical one may reach the Controller second and be refused
there; it is then answered as a repeat, because it is one.

The attempt is the member's placement attempt (`MemberView.attempt`); the Controller's
attempt- and task-stamped commands (docs/design.md §8) decide whether a report is new, a repeat
(answered ``applied = false``) or stale (409).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Final, Literal

import msgspec
from msgspec import Meta

from costart.controller import Controller, ReportResult
from costart.domain import limits
from costart.domain.actors import Actor
from costart.domain.errors import Conflict, NotFound, SpecError
from costart.domain.spec_types import FailureReason
from costart.domain.states import GROUP_TERMINAL
from costart.projections import GroupView, HoldView, MemberView, Views

TaskEvent = Literal["started", "exited", "succeeded"]
ClaimOutcome = Literal["READY", "FAILED"]
# What an agent may say ended a task; "refused": the node would not run it as asked.
ExitReason = Literal["error", "oom", "preempted", "node-lost", "refused"]
MAX_ATTEMPT: Final = 2**31 - 1
EXIT_CODES: Final = (-(2**31), 2**31 - 1)  # a process's exit status, or minus a signal
Attempt = Annotated[
    int,
    Meta(
        ge=1,  # a member's first placement is attempt 1; 0 is no attempt at all
        le=MAX_ATTEMPT,
        description="the placement attempt the report is about, from 1 (an older one "
        "writes nothing)",
    ),
]


class ClaimReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A claim of a member turned READY or failed, in the group's ``attempt``."""

    attempt: Attempt
    status: Annotated[ClaimOutcome, Meta(description="READY or FAILED")]
    reason: Annotated[
        str | None, Meta(description="why the claim failed (required for FAILED)")
    ] = None
    task: Annotated[
        int | None,
        Meta(description="the task whose own claim it is (a task claim); null: a member claim"),
    ] = None


class TaskReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A task of a member started, exited (with a code and a reason) or succeeded."""

    attempt: Attempt
    event: Annotated[TaskEvent, Meta(description="started, exited or succeeded")]
    exit_code: Annotated[
        Annotated[int, Meta(ge=EXIT_CODES[0], le=EXIT_CODES[1])] | None,
        Meta(description="the process's exit code (exited)"),
    ] = None
    reason: Annotated[
        ExitReason | None,
        Meta(
            description="why it exited: error, oom, node-lost, preempted... (required for exited)"
        ),
    ] = None
    note: Annotated[
        str | None,
        Meta(description="what happened, in words, when the reason does not say it all (exited)"),
    ] = None


class ReportAnswer(msgspec.Struct, frozen=True):
    """``applied``: whether this report changed anything (false: it was a repeat)."""

    applied: Annotated[
        bool, Meta(description="whether the report changed anything (false: a repeat)")
    ]
    detail: Annotated[str, Meta(description="what the report did, in words")]
    member: Annotated[MemberView, Meta(description="the member as it is now")]


class Subject(msgspec.Struct, frozen=True):
    """What a report is about, as the views show it now."""

    group: GroupView
    member: MemberView
    tasks: tuple[HoldView, ...]  # the member's placed tasks (kind "used")

    @property
    def ref(self) -> str:
        return f"{self.group.name}/{self.member.name}"

    def node_of(self, task: int) -> str:
        """The node ``task`` is placed on: `NotFound` for a task the member does not have,
        `Conflict` for one of its tasks that is not placed now (the group is pending, say)."""
        for hold in self.tasks:
            if hold.index == task:
                return hold.node
        if 0 <= task < self.member.desired:
            raise Conflict(
                f"task {task} of member {self.ref} is not placed (the group is {self.group.state})"
            )
        raise NotFound(f"member {self.ref} has no task {task}")

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


def check_claim(report: ClaimReport) -> None:
    if report.status == "FAILED" and not report.reason:
        raise SpecError("reason", "a FAILED claim needs a reason")
    if report.reason is not None and len(report.reason) > limits.MAX_REASON_TEXT:
        raise SpecError("reason", f"longer than {limits.MAX_REASON_TEXT} characters")


def check_task(report: TaskReport) -> None:
    if report.event == "exited" and report.reason is None:
        raise SpecError("reason", "an exited task needs a reason")
    if report.event != "exited" and (
        report.reason is not None or report.exit_code is not None or report.note is not None
    ):
        raise SpecError("reason", "only an exited task has a reason, an exit_code and a note")
    if report.note is not None and (
        len(report.note) > limits.MAX_REASON_TEXT or not report.note.isprintable()
    ):
        raise SpecError("note", f"printable text of at most {limits.MAX_REASON_TEXT} characters")


class Reports:
    """Applies reports through the Controller's attempt- and task-stamped commands, which
    decide whether a report is new, a repeat or stale. ``views`` gives the views once
    they hold everything decided before (`Service.views`); ``changed`` tells the service
    the log gained events."""

    def __init__(
        self, controller: Controller, views: Callable[[], Views], changed: Callable[[], None]
    ) -> None:
        self.controller = controller
        self._views = views
        self.changed = changed

    @property
    def views(self) -> Views:
        return self._views()

    def claim(
        self, group: str, member: str, claim: str, report: ClaimReport, actor: Actor
    ) -> ReportAnswer:
        task = report.task

        def apply(s: Subject) -> ReportResult:
            if task is None and claim not in s.member.claims:
                raise NotFound(f"member {s.ref} has no claim {claim!r}")
            if task is not None and not any(
                t.index == task and claim in t.claims for t in s.member.tasks
            ):
                raise NotFound(f"task {task} of member {s.ref} has no claim {claim!r}")
            attempt = report.attempt
            if report.status == "READY":
                return self.controller.claim_ready(s.ref, claim, attempt, task=task, actor=actor)
            reason = report.reason or ""
            return self.controller.claim_failed(
                s.ref, claim, attempt, reason, task=task, actor=actor
            )

        return self._report(group, member, report.attempt, apply, f"claim {claim}")

    def task(
        self, group: str, member: str, task: int, report: TaskReport, actor: Actor
    ) -> ReportAnswer:
        if task >= max(subject(self.views, group, member).member.desired, 1):
            raise NotFound(f"member {group}/{member} has no task {task}")

        def apply(s: Subject) -> ReportResult:
            ref, attempt = s.ref, report.attempt
            if report.event == "started":
                return self.controller.task_started(ref, task, attempt, actor=actor)
            if report.event == "succeeded":
                return self.controller.task_succeeded(ref, task, attempt, actor=actor)
            reason: FailureReason = report.reason or "error"
            return self.controller.task_failed(
                ref,
                task,
                attempt,
                reason,
                exit_code=report.exit_code,
                actor=actor,
                note=report.note,
            )

        return self._report(group, member, report.attempt, apply, f"task {task} {report.event}")

    def _report(
        self,
        group: str,
        member: str,
        attempt: int,
        apply: Callable[[Subject], ReportResult],
        what: str,
    ) -> ReportAnswer:
        now = subject(self.views, group, member)
        if attempt > now.member.attempt:
            raise Conflict(
                f"stale report: attempt {attempt}, but member {now.ref} is on attempt "
                f"{now.member.attempt}"
            )
        result = apply(now)
        if result.outcome == "stale":
            state = now.group.state
            if state in GROUP_TERMINAL:
                raise Conflict(f"group {group} is {state}: {what} changes nothing")
            raise Conflict(f"stale report: {what}: {result.detail}")
        applied = result.outcome == "applied"
        if applied:
            self.changed()
        detail = f"{what}: recorded" if applied else f"{what}: already reported ({result.detail})"
        return ReportAnswer(applied, detail, subject(self.views, group, member).member)
