"""Schema evolution: a field added with a default leaves old records' bytes alone (ADR
0004, docs/design.md §8). That records written before still decode is the release log fixture's
test (``tests/compat``)."""

from __future__ import annotations

from uuid import UUID

import msgspec

from costart.domain import events as ev
from costart.domain import spec_types as st
from costart.eventlog.codec import canonical_decode, canonical_encode
from tests.builders import a_group

GID = UUID(int=7)


class MemberFailedLater(ev.MemberFailed, frozen=True, tag="MemberFailed"):
    """`MemberFailed` as a later release might extend it."""

    note: str | None = None
    tries: tuple[int, ...] = ()


class GroupSpecLater(st.GroupSpec, frozen=True):
    weight: int = 0


# msgspec writes a struct's map header for the most fields the struct may hold, not for
# the fields it writes: a fixmap up to 15 fields, a map16 from 16. So a struct that grows
# from 15 fields to 16 changes the header of every record written before, even with every
# new field at its default. A logged struct stays at 15 fields or fewer; a new field for a
# full one goes into a nested table (as `run` holds the run settings).
FIXMAP_FIELDS = 15


def logged_structs() -> list[type[msgspec.Struct]]:
    """Every struct type whose bytes reach the log: the events and the spec types."""
    found = []
    for module in (ev, st):
        for value in vars(module).values():
            is_struct = isinstance(value, type) and issubclass(value, msgspec.Struct)
            if is_struct and value.__module__ == module.__name__:
                found.append(value)
    return found


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
    group = a_group().with_member("a").build()
    later = GroupSpecLater(**msgspec.structs.asdict(group))
    assert canonical_encode(later) == canonical_encode(group)


def test_a_struct_that_grows_past_fifteen_fields_would_change_old_records() -> None:
    """Why the limit below exists: the 16th field changes the header of old records."""
    member = a_group().with_member("a").build().members[0]
    assert len(st.MemberSpec.__struct_fields__) == FIXMAP_FIELDS
    grown = msgspec.defstruct(
        "MemberSpecGrown", [("weight", int, 0)], bases=(st.MemberSpec,), frozen=True
    )
    assert canonical_encode(grown(**msgspec.structs.asdict(member)))[:1] == b"\xde"
    assert canonical_encode(member)[:1] == b"\x88"  # a fixmap of the 8 fields written


def test_no_logged_struct_has_more_fields_than_a_fixmap_header_holds() -> None:
    structs = logged_structs()
    assert st.MemberSpec in structs and ev.MemberFailed in structs
    over = {c.__name__: len(c.__struct_fields__) for c in structs}
    over = {name: n for name, n in over.items() if n > FIXMAP_FIELDS}
    assert not over, (
        f"{over}: more than {FIXMAP_FIELDS} fields changes the map header of every record "
        "written before; put the new field into a nested table"
    )


def test_fields_at_their_default_are_left_out_and_decode_back() -> None:
    event = _failed(ev.MemberFailed)
    raw = msgspec.msgpack.decode(canonical_encode(event))
    assert "index" not in raw and "exit_code" in raw  # None without a default is a value
    assert canonical_decode(canonical_encode(event), ev.MemberFailed) == event
