"""Giving capacity back: release-and-retry, fail, stop. Shared by every command that ends
an attempt or the group, so no path can forget a member (docs/design.md §3.4 #4)."""

from __future__ import annotations

from costart.domain import events as ev
from costart.domain.aggregates import GroupUnit
from costart.domain.policy import backoff_delay_ns


def release_and_retry(unit: GroupUnit, reason: str, at_ns: int, *, counts_attempt: bool) -> None:
    """Release every member, then back off; fail the group when its attempts are spent.

    ``counts_attempt`` is true for placement-side failures (timeouts, claim failures), which
    ``placement.max_attempts`` bounds; a restart-group has its own budget.
    """
    group = unit.group.state
    spec = group.spec
    if (
        counts_attempt
        and spec.placement.max_attempts
        and group.attempt >= spec.placement.max_attempts
    ):
        fail_group(unit, None, f"{reason}; gave up after {group.attempt} attempts", at_ns)
        return
    for member in unit.members:
        member.trigger(ev.MemberReleased, at_ns, reason=reason)
    delay = backoff_delay_ns(
        spec.placement.backoff_ns, spec.placement.backoff_max_ns, group.releases
    )
    unit.group.trigger(ev.PlacementReleased, at_ns, reason=reason, retry_at_ns=at_ns + delay)


def stop_live_members(unit: GroupUnit, reason: str, at_ns: int) -> None:
    for member in unit.members:
        if not member.state.is_terminal:
            member.trigger(ev.MemberStopped, at_ns, reason=reason)


def fail_group(unit: GroupUnit, member: str | None, reason: str, at_ns: int) -> None:
    stop_live_members(unit, f"group failed: {reason}", at_ns)
    unit.group.trigger(ev.GroupFailed, at_ns, member=member, reason=reason)
