"""Pend reasons and terminal causes in words, rendered when someone reads them.

A stored `PendReason` holds facts (the retry time, the groups ahead); this module turns
them into a sentence true at ``now_ns``. Reasons in logs written before the facts were
stored carry clock text such as ``until t=2245433786222ns``: it is rewritten into a
readable time, so an old log still reads well.
"""

from __future__ import annotations

import re
from typing import Final

from costart.display.timefmt import clock, relative
from costart.domain.events import PendReason

_RAW_TIME: Final = re.compile(r"\bt=(\d+)ns\b")
_PENDING_LIKE: Final = frozenset({"PENDING", "RESERVING", "PLACED"})


def readable(text: str) -> str:
    """``text`` with raw controller times (``t=2245433786222ns``, written by older
    releases) as clock times."""
    return _RAW_TIME.sub(lambda m: clock(int(m.group(1))), text)


def retry_text(until_ns: int, now_ns: int) -> str:
    """When a group in backoff tries again."""
    if until_ns <= now_ns:
        return "retry at the next session"
    return f"retry {relative(until_ns, now_ns)} (at {clock(until_ns)})"


def reason_text(reason: PendReason | None, now_ns: int) -> str:
    """``class: words`` for a pend reason, its times relative to ``now_ns``."""
    if reason is None:
        return "-"
    text = f"{reason.cls}: {readable(reason.message)}"
    if reason.until_ns is not None:
        text += f"; {retry_text(reason.until_ns, now_ns)}"
    if reason.planned_start_ns is not None:
        text += f"; {planned_text(reason.planned_start_ns, reason.planned_basis, now_ns)}"
    return text


def planned_text(start_ns: int, basis: str | None, now_ns: int) -> str:
    """When a plan-ahead reservation is planned to start, and on what that rests."""
    on = f" by {'declared limits' if basis == 'limit' else 'runtime estimates'}"
    if start_ns <= now_ns:
        return f"planned to start now{on}"
    return f"planned to start {relative(start_ns, now_ns)} (at {clock(start_ns)}){on}"


def queue_text(reason: PendReason) -> str | None:
    """The 1-based queue position with the groups ahead, or None if not queued."""
    if reason.queue_position is None:
        return None
    position = reason.queue_position + 1
    if not reason.queue_position:
        return f"#{position} (head of the queue)"
    names = ", ".join(reason.ahead)
    more = reason.queue_position - len(reason.ahead)
    if more > 0:
        names += f" and {more} more" if names else f"{more} groups"
    return f"#{position} (behind {names})"


def group_reason(
    state: str,
    pend_reason: PendReason | None,
    last_reason: str | None,
    retry_at_ns: int,
    now_ns: int,
) -> str:
    """What a group's REASON column says now: its terminal cause once it ended, why it
    waits while it waits (between a release and the next session: the backoff), and
    what degraded it while it runs degraded."""
    if state == "SUCCEEDED":
        return "succeeded"
    if state == "CANCELLED":
        return "cancelled"
    if state == "FAILED":
        return f"failed: {last_reason}" if last_reason else "failed"
    if state == "DEGRADED":
        return f"degraded: {last_reason}" if last_reason else "degraded"
    if state not in _PENDING_LIKE:
        return "-"
    # A release returns the group to PENDING before the next session states why: a
    # reason from before (waiting for claims) no longer holds, and none is not an answer.
    stale = state == "PENDING" and (pend_reason is None or pend_reason.cls == "claims")
    if pend_reason is not None and not stale:
        return reason_text(pend_reason, now_ns)
    if state == "PENDING" and retry_at_ns > now_ns:
        after = f" after: {last_reason}" if last_reason else ""
        return f"backoff: released{after}; {retry_text(retry_at_ns, now_ns)}"
    return "waiting for the next scheduling session"


def member_reason(state: str, last_reason: str | None) -> str:
    """What a member's REASON column says: its terminal cause, or its last failure."""
    if state == "SUCCEEDED":
        return "succeeded"
    if state in ("FAILED", "STOPPED"):
        return f"{state.lower()}: {last_reason}" if last_reason else state.lower()
    return f"last failure: {last_reason}" if last_reason else "-"
