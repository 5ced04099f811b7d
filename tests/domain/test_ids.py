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


def test_an_ids_text_is_its_canonical_text_and_is_kept_for_the_next_time(monkeypatch) -> None:
    from costart.domain import ids

    monkeypatch.setattr(ids, "_ID_TEXTS", {})
    first = ids.name_uuid(ids.COSTART_NAMESPACE.bytes, "id-text/1")
    assert ids.id_text(first) == str(first)
    assert {first.int: str(first)} == ids._ID_TEXTS
    ids._ID_TEXTS[first.int] = "kept"  # a second call reads the cache, not str()
    assert ids.id_text(first) == "kept"


def test_the_id_text_cache_is_cleared_when_full_and_never_grows_past_its_bound(
    monkeypatch,
) -> None:
    from costart.domain import ids

    monkeypatch.setattr(ids, "_ID_TEXTS", {})
    monkeypatch.setattr(ids, "_ID_TEXTS_MAX", 3)
    made = [ids.name_uuid(ids.COSTART_NAMESPACE.bytes, f"id-text/{i}") for i in range(4)]
    for uid in made[:3]:
        ids.id_text(uid)
    assert len(ids._ID_TEXTS) == 3
    assert ids.id_text(made[3]) == str(made[3])
    assert {made[3].int: str(made[3])} == ids._ID_TEXTS


@given(value=st.uuids())
def test_an_ids_text_is_str_of_the_uuid_for_every_uuid(value: uuid.UUID) -> None:
    """`id_text` writes the text in C (msgspec's JSON form of a UUID): the very text
    ``str(UUID)`` gives, every version and variant (ADR 0130)."""
    from costart.domain import ids

    ids._ID_TEXTS.pop(value.int, None)  # not read from the cache
    assert ids.id_text(value) == str(value)
