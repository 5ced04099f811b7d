"""One submitted group (members "a" and "b" ×2) as raw events, for tests that fold
events into a World by hand."""

from __future__ import annotations

from costart.domain import events as ev
from costart.domain.ids import group_id, member_ids
from tests.builders import a_group

SPEC = a_group().with_member("a").with_member("b", replicas=2).build()
GID = group_id(1, SPEC.name)
MEMBER_IDS = member_ids(GID, [m.name for m in SPEC.members])


def submitted() -> ev.GroupSubmitted:
    """The group's `GroupSubmitted` at time 1, the first submission."""
    return ev.GroupSubmitted(
        originator_id=GID,
        originator_version=1,
        group_id=GID,
        at_ns=1,
        spec=SPEC,
        submission_seq=1,
        member_ids=MEMBER_IDS,
    )
