"""Aggregate ids are RFC 4122 version-5 UUIDs: the same values `uuid.uuid5` gives."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from costart.domain.ids import COSTART_NAMESPACE, group_id, member_ids, name_uuid


@given(namespace=st.uuids(), name=st.text())
def test_name_uuid_is_uuid5(namespace: uuid.UUID, name: str) -> None:
    made = name_uuid(namespace.bytes, name)
    assert made == uuid.uuid5(namespace, name)
    assert made.version == 5 and made.variant == uuid.RFC_4122


def test_group_and_member_ids_keep_their_published_derivation() -> None:
    gid = group_id(7, "grpo-run-42")
    assert gid == uuid.uuid5(COSTART_NAMESPACE, "group/7/grpo-run-42")
    assert member_ids(gid, ["trainer", "rollout"]) == (
        uuid.uuid5(gid, "member/trainer"),
        uuid.uuid5(gid, "member/rollout"),
    )
