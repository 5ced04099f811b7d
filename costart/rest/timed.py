"""REST bodies with readable times: every ``*_ns`` field of a view row gets an RFC 3339
string beside it (``submitted_at_ns`` -> ``submitted_at``), null exactly when the ns
field is null; a group also lists its open deadlines with the time left.

The view rows stay as stored (rebuilt views equal incremental ones byte for byte); the
strings are added on the way out. ``retry_at_ns`` is 0 for a group with no retry time
(the stored row's convention), and its ``retry_at`` is then null.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, TypeVar

import msgspec
from msgspec import Meta

from costart.display import rfc3339
from costart.domain.events import PendReason
from costart.domain.states import GROUP_WAITING
from costart.projections import (
    GroupDetail,
    GroupView,
    HoldView,
    MemberView,
    PendEntry,
    TimelineEntry,
)
from costart.projections.deadlines import DeadlineKind, open_deadlines
from costart.service.expected_starts import ExpectedStart

T = TypeVar("T", bound=msgspec.Struct)


class Deadline(msgspec.Struct, frozen=True, kw_only=True):
    """An open deadline of a group: when, and how long is left at the answer's time."""

    kind: Annotated[
        DeadlineKind,
        Meta(
            description="reservation expiry, barrier deadline, retry after a release, or the "
            "runtime estimate a group was admitted on running out"
        ),
    ]
    at_ns: Annotated[int, Meta(description="when, nanoseconds since the Unix epoch")]
    at: Annotated[str, Meta(description="when, RFC 3339 UTC")]
    left_ns: Annotated[
        int, Meta(description="time left at the answer's time, nanoseconds (negative: passed)")
    ]


class TimedGroup(GroupView, frozen=True, kw_only=True):
    """A group row with RFC 3339 times and its open deadlines."""

    submitted_at: Annotated[str, Meta(description="submitted_at_ns as RFC 3339 UTC")]
    placed_at: Annotated[str | None, Meta(description="placed_at_ns as RFC 3339 UTC")] = None
    started_at: Annotated[str | None, Meta(description="started_at_ns as RFC 3339 UTC")] = None
    ended_at: Annotated[str | None, Meta(description="ended_at_ns as RFC 3339 UTC")] = None
    reservation_deadline: Annotated[
        str | None, Meta(description="reservation_deadline_ns as RFC 3339 UTC")
    ] = None
    barrier_deadline: Annotated[
        str | None, Meta(description="barrier_deadline_ns as RFC 3339 UTC")
    ] = None
    retry_at: Annotated[
        str | None, Meta(description="retry_at_ns as RFC 3339 UTC (null: none)")
    ] = None
    last_event_at: Annotated[str | None, Meta(description="last_event_at_ns as RFC 3339 UTC")] = (
        None
    )
    deadlines: Annotated[
        tuple[Deadline, ...], Meta(description="the group's open deadlines with the time left")
    ] = ()
    expected_start: Annotated[
        ExpectedStart | None,
        Meta(
            description="a waiting group's expected start, made off the command path and "
            "never logged: the point, an interval holding the start 4 times in 5, and what "
            "it rests on (null: not waiting, or no estimate; see /v1/expected-starts)"
        ),
    ] = None


class TimedMember(MemberView, frozen=True, kw_only=True):
    """A member row with RFC 3339 times."""

    started_at: Annotated[str | None, Meta(description="started_at_ns as RFC 3339 UTC")] = None
    ended_at: Annotated[str | None, Meta(description="ended_at_ns as RFC 3339 UTC")] = None


class TimedEvent(TimelineEntry, frozen=True, kw_only=True):
    """A timeline entry with its RFC 3339 time."""

    at: Annotated[str, Meta(description="at_ns as RFC 3339 UTC")]


class TimedPendEntry(PendEntry, frozen=True, kw_only=True):
    """A pend-reason change with its RFC 3339 time."""

    at: Annotated[str, Meta(description="at_ns as RFC 3339 UTC")]


class TimedGroupDetail(msgspec.Struct, frozen=True, kw_only=True):
    """`GroupDetail` with RFC 3339 times throughout."""

    group: Annotated[TimedGroup, Meta(description="the group")]
    members: Annotated[tuple[TimedMember, ...], Meta(description="its members in spec order")]
    holds: Annotated[tuple[HoldView, ...], Meta(description="capacity it holds or uses, per node")]
    pend_history: Annotated[
        tuple[TimedPendEntry, ...], Meta(description="every change of its pend reason")
    ]
    events: Annotated[tuple[TimedEvent, ...], Meta(description="its recent events")]


class TimedWhy(msgspec.Struct, frozen=True):
    """Why a group is (or was) not running: its current reason and every change."""

    group: Annotated[str, Meta(description="the group's name")]
    state: Annotated[str, Meta(description="the group's state")]
    pend_reason: Annotated[
        PendReason | None,
        Meta(description="why it is not running now (null: nothing holds it back)"),
    ]
    history: Annotated[
        tuple[TimedPendEntry, ...], Meta(description="every change of its pend reason")
    ]


def _timed(row: msgspec.Struct, doc: type[T], **extra: Any) -> T:
    """``row`` as ``doc``: each ``X_ns`` field that ``doc`` pairs with an ``X`` field
    gets its RFC 3339 string (null when the time is unset)."""
    fields = msgspec.structs.asdict(row)
    for name, text_name in _time_fields(type(row), doc):
        if text_name not in extra:
            value = fields[name]
            fields[text_name] = None if value is None else rfc3339(value)
    return doc(**fields, **extra)


@functools.cache
def _time_fields(
    row: type[msgspec.Struct], doc: type[msgspec.Struct]
) -> tuple[tuple[str, str], ...]:
    """The (``X_ns``, ``X``) field pairs of ``row`` that ``doc`` shows as text."""
    names = set(doc.__struct_fields__)
    pairs = ((n, n.removesuffix("_ns")) for n in row.__struct_fields__ if n.endswith("_ns"))
    return tuple((n, text) for n, text in pairs if text in names)


def deadlines(group: GroupView, now_ns: int) -> tuple[Deadline, ...]:
    """The group's open deadlines with the time left at ``now_ns``."""
    return tuple(
        Deadline(kind=kind, at_ns=at, at=rfc3339(at), left_ns=at - now_ns)
        for kind, at in open_deadlines(group)
    )


def group_doc(
    group: GroupView, now_ns: int, expected_start: ExpectedStart | None = None
) -> TimedGroup:
    """``expected_start``: the estimator's for this group, shown only while it waits."""
    retry = rfc3339(group.retry_at_ns) if group.retry_at_ns else None
    if expected_start is not None and group.state not in GROUP_WAITING:
        expected_start = None  # planned while it waited; it has moved on since
    return _timed(
        group,
        TimedGroup,
        retry_at=retry,
        deadlines=deadlines(group, now_ns),
        expected_start=expected_start,
    )


def member_doc(member: MemberView) -> TimedMember:
    return _timed(member, TimedMember)


def event_doc(entry: TimelineEntry) -> TimedEvent:
    return _timed(entry, TimedEvent)


def pend_entry_doc(entry: PendEntry) -> TimedPendEntry:
    return _timed(entry, TimedPendEntry)


def detail_doc(
    detail: GroupDetail, now_ns: int, expected_start: ExpectedStart | None = None
) -> TimedGroupDetail:
    return TimedGroupDetail(
        group=group_doc(detail.group, now_ns, expected_start),
        members=tuple(member_doc(m) for m in detail.members),
        holds=detail.holds,
        pend_history=tuple(pend_entry_doc(p) for p in detail.pend_history),
        events=tuple(event_doc(e) for e in detail.events),
    )
