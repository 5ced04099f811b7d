"""Schema evolution: a field added with a default leaves old records' bytes alone (ADR
0004, DESIGN §8). That records written before still decode is the release log fixture's
test (``tests/compat``)."""

from __future__ import annotations

from uuid import UUID

import msgspec

from costart.domain import events as ev
from costart.domain import spec_types as st
from costart.store.codec import canonical_decode, canonical_encode
from tests.builders import a_group

GID = UUID(int=7)


class MemberFailedLater(ev.MemberFailed, frozen=True, tag="MemberFailed"):
    """`MemberFailed` as a later release might extend it."""

    note: str | None = None
    tries: tuple[int, ...] = ()


class MemberSpecLater(st.MemberSpec, frozen=True):
    weight: int = 0


def _failed(cls: type[ev.MemberFailed]) -> ev.MemberFailed:
    return cls(
        originator_id=GID,
        originator_version=3,
        group_id=GID,
        at_ns=5,
        reason="error",
        exit_code=None,
        action="tolerate",
    )


def test_an_event_field_added_with_a_default_does_not_change_old_records() -> None:
    assert canonical_encode(_failed(MemberFailedLater)) == canonical_encode(
        _failed(ev.MemberFailed)
    )


def test_a_spec_field_added_with_a_default_does_not_change_old_records() -> None:
    member = a_group().with_member("a").build().members[0]
    later = MemberSpecLater(**msgspec.structs.asdict(member))
    assert canonical_encode(later) == canonical_encode(member)


def test_fields_at_their_default_are_left_out_and_decode_back() -> None:
    event = _failed(ev.MemberFailed)
    raw = msgspec.msgpack.decode(canonical_encode(event))
    assert "index" not in raw and "exit_code" in raw  # None without a default is a value
    assert canonical_decode(canonical_encode(event), ev.MemberFailed) == event
