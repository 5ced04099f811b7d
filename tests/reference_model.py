"""An independent reference model of the failure policy and the success conditions
(docs/design.md §3.1, §5), written from the design text, not from the domain code: small, slow
and obviously right. It shares nothing with `costart.domain.policy` or
`costart.domain.lifecycle` but the spec types.

Two parts:

- pure decisions: which rule applies, the action after budgets, whether the group
  succeeded, whether a tolerated failure drops a replica set below ``min_running``;
- `PolicyModel`: follows one controller's events and checks every decision the domain
  wrote (the action of each `MemberFailed`, the counters of each restart, and what the
  group did next) against its own, with restart counters it keeps itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from costart.domain import events as ev
from costart.domain.spec_types import FailureRule, GroupSpec, MemberSpec

BUDGET_FREE = ("node-lost", "preempted")  # the cluster's doing (docs/design.md §3.1)
ENDED = ("SUCCEEDED", "FAILED", "STOPPED")


def rules_that_match(spec: GroupSpec, member: str, reason: str) -> list[FailureRule]:
    """Every rule that names the member (or names none) and the reason (or ``any``)."""
    return [
        rule
        for rule in spec.failure.rules
        if (rule.members == () or member in rule.members)
        and (reason in rule.reasons or "any" in rule.reasons)
    ]


def rule_that_applies(spec: GroupSpec, member: str, reason: str) -> FailureRule | None:
    """First match wins."""
    matching = rules_that_match(spec, member, reason)
    return matching[0] if matching else None


def action_for(
    spec: GroupSpec, member: str, reason: str, member_restarts: int, group_restarts: int
) -> str:
    """The action after budgets. ``*_restarts`` count only budget-using restarts so far.

    A budget-free reason never uses a budget, so it never escalates either; a spent budget
    (restarts already equal to it) escalates to fail-group. Without a rule the member's
    budget is 0."""
    rule = rule_that_applies(spec, member, reason)
    action = spec.failure.default if rule is None else rule.action
    if reason in BUDGET_FREE:
        return action
    if action == "restart-member":
        budget = spec.failure.default_max_restarts if rule is None else rule.max_restarts
        return "restart-member" if member_restarts < budget else "fail-group"
    if action == "restart-group":
        budget = spec.failure.max_group_restarts
        return "restart-group" if group_restarts < budget else "fail-group"
    return action


def succeeded(spec: GroupSpec, statuses: dict[str, str]) -> bool:
    """The success condition over member name -> status."""
    job_statuses = [statuses[m.name] for m in spec.members if m.kind == "job"]
    when = spec.success.when
    if when == "any-job":
        return "SUCCEEDED" in job_statuses
    if when == "members":
        return all(statuses[name] == "SUCCEEDED" for name in spec.success.members)
    # all-jobs: every job ended and at least one succeeded.
    if not job_statuses:
        return False
    return all(s in ENDED for s in job_statuses) and "SUCCEEDED" in job_statuses


def every_job_failed(spec: GroupSpec, statuses: dict[str, str]) -> bool:
    job_statuses = [statuses[m.name] for m in spec.members if m.kind == "job"]
    return len(job_statuses) > 0 and all(s == "FAILED" for s in job_statuses)


def below_floor(member: MemberSpec, replicas_left: int) -> bool:
    """Tolerating a failure fails the group when a replica set drops below min_running."""
    return member.kind == "replica-set" and replicas_left < member.min_running


# --- following a controller ------------------------------------------------------------

OUTCOMES = (
    ev.GroupFailed,
    ev.GroupSucceeded,
    ev.GroupRestarted,
    ev.GroupDegraded,
    ev.MemberRestarted,
)
"""The events by which a group acts on a failure or a success."""


@dataclass
class GroupBook:
    """What the model keeps about one group: its own restart counts."""

    spec: GroupSpec
    member_restarts: dict[str, int] = field(default_factory=dict)
    group_restarts: int = 0


@dataclass
class MemberView:
    """One member as the model sees it while it walks a command's events."""

    status: str
    alive: set[int]


class ModelDisagrees(AssertionError):
    pass


class PolicyModel:
    """Checks the domain's failure and success decisions, event by event.

    Call `observe(events, before)` with one command's events and, for every member, its
    status and task indexes just before the command (``before``: member id's int ->
    (status, indexes)); the model walks the events and raises `ModelDisagrees` at the
    first decision it would have made otherwise."""

    def __init__(self) -> None:
        self.books: dict[int, GroupBook] = {}
        self.member_names: dict[int, tuple[int, str]] = {}
        self.decisions = 0

    def observe(
        self, events: list[ev.DomainEvent], before: dict[int, tuple[str, list[int]]]
    ) -> None:
        views: dict[int, dict[str, MemberView]] = {}
        pending: list[tuple[int, list[str]]] = []  # (group, outcomes still expected)
        for event in events:
            gid = event.group_id.int
            if isinstance(event, ev.GroupSubmitted):
                self.books[gid] = GroupBook(event.spec)
                for mid, mspec in zip(event.member_ids, event.spec.members, strict=True):
                    self.member_names[mid.int] = (gid, mspec.name)
                continue
            book = self.books.get(gid)
            if book is None:
                continue
            if isinstance(event, OUTCOMES):
                self._outcome(gid, event, pending, book)
            if isinstance(event, ev.MemberFailed | ev.MemberSucceeded):
                view = views.setdefault(gid, self._view(book.spec, gid, before))
                self._check_settled(gid, pending)
                pending.append((gid, self._decide(book, view, event)))
                self.decisions += 1
        for gid, expected in pending:
            if expected:
                name = self.books[gid].spec.name
                raise ModelDisagrees(f"group {name}: expected {expected} next, got nothing")

    def _view(
        self, spec: GroupSpec, gid: int, before: dict[int, tuple[str, list[int]]]
    ) -> dict[str, MemberView]:
        view = {}
        for mid, (status, indexes) in before.items():
            owner, name = self.member_names[mid]
            if owner == gid:
                view[name] = MemberView(status, set(indexes))
        return view

    def _check_settled(self, gid: int, pending: list[tuple[int, list[str]]]) -> None:
        for owner, expected in pending:
            if owner == gid and expected:
                raise ModelDisagrees(
                    f"group {self.books[gid].spec.name}: expected {expected} before the next decision"
                )

    def _outcome(self, gid: int, event, pending, book: GroupBook) -> None:
        kind = type(event).__name__
        for owner, expected in pending:
            if owner == gid and expected:
                if expected[0] != kind:
                    raise ModelDisagrees(
                        f"group {book.spec.name}: expected {expected[0]}, got {kind}"
                    )
                expected.pop(0)
                break
        else:
            if isinstance(event, ev.GroupFailed):
                return  # placement attempts spent: not a failure-policy decision
            raise ModelDisagrees(f"group {book.spec.name}: {kind} with no decision behind it")
        if isinstance(event, ev.MemberRestarted):
            _, name = self.member_names[event.originator_id.int]
            if event.restarts != book.member_restarts.get(name, 0):
                raise ModelDisagrees(
                    f"{book.spec.name}/{name}: restarts {event.restarts}, model counts "
                    f"{book.member_restarts.get(name, 0)}"
                )
        if isinstance(event, ev.GroupRestarted) and event.restarts != book.group_restarts:
            raise ModelDisagrees(
                f"{book.spec.name}: group restarts {event.restarts}, model counts {book.group_restarts}"
            )

    def _decide(self, book: GroupBook, view: dict[str, MemberView], event) -> list[str]:
        """The outcomes the model expects after this failure or success, in order; the
        model's counters and view move on as if they happened."""
        spec = book.spec
        _, name = self.member_names[event.originator_id.int]
        member = view[name]
        if isinstance(event, ev.MemberSucceeded):
            member.status = "SUCCEEDED"
            member.alive.clear()
            return self._conclude(spec, view)
        action = action_for(
            spec, name, event.reason, book.member_restarts.get(name, 0), book.group_restarts
        )
        if event.action != action:
            raise ModelDisagrees(
                f"{spec.name}/{name} failed ({event.reason}): domain chose {event.action}, "
                f"the model {action}"
            )
        if event.index is not None:
            member.alive.discard(event.index)
        else:
            member.alive.clear()
        if not member.alive:
            member.status = "FAILED"
        counts = event.reason not in BUDGET_FREE
        if action == "fail-group":
            return ["GroupFailed"]
        if action == "restart-member":
            book.member_restarts[name] = book.member_restarts.get(name, 0) + counts
            if member.status == "FAILED":
                member.status = "RESTARTING"
            return ["MemberRestarted"]
        if action == "restart-group":
            book.group_restarts += counts
            return ["GroupRestarted"]
        if below_floor(spec.member(name), len(member.alive)):
            return ["GroupFailed"]
        return ["GroupDegraded", *self._conclude(spec, view)]

    @staticmethod
    def _conclude(spec: GroupSpec, view: dict[str, MemberView]) -> list[str]:
        statuses = {name: m.status for name, m in view.items()}
        if succeeded(spec, statuses):
            return ["GroupSucceeded"]
        if every_job_failed(spec, statuses):
            return ["GroupFailed"]
        return []
