"""Failure-policy decisions (docs/design.md §3.1, §5): the first matching rule wins."""

from __future__ import annotations

from costart.domain.spec_types import (
    BUDGET_FREE_REASONS,
    FailureAction,
    FailureReason,
    FailureRule,
    GroupSpec,
)


def matching_rule(spec: GroupSpec, member: str, reason: FailureReason) -> FailureRule | None:
    """The first rule naming ``member`` (or every member) and ``reason`` (or ``any``)."""
    for rule in spec.failure.rules:
        if rule.members and member not in rule.members:
            continue
        if reason in rule.reasons or "any" in rule.reasons:
            return rule
    return None


def consumes_budget(reason: FailureReason) -> bool:
    """node-lost and preempted are the cluster's doing: they never use up a budget."""
    return reason not in BUDGET_FREE_REASONS


def decide_action(
    spec: GroupSpec,
    member: str,
    reason: FailureReason,
    member_restarts: int,
    group_restarts: int,
) -> FailureAction:
    """The action for this failure, after budgets: a spent budget escalates to fail-group."""
    rule = matching_rule(spec, member, reason)
    action = rule.action if rule else spec.failure.default
    counted = consumes_budget(reason)
    if action == "restart-member":
        budget = rule.max_restarts if rule else spec.failure.default_max_restarts
        if counted and member_restarts >= budget:
            return "fail-group"
    elif (
        action == "restart-group" and counted and group_restarts >= spec.failure.max_group_restarts
    ):
        return "fail-group"
    return action


def backoff_delay_ns(base_ns: int, max_ns: int, releases_before: int) -> int:
    """Exponential backoff: base, 2×base, 4×base, … capped at ``max_ns``."""
    if base_ns == 0:
        return 0
    delay = base_ns
    for _ in range(releases_before):
        delay *= 2
        if delay >= max_ns:
            return max_ns
    return min(delay, max_ns)
