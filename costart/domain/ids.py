"""Deterministic aggregate ids (uuid5 of stable names; never uuid4).

A group's id is derived from its submission sequence number and its name, so a name can
be reused after the earlier group ended, and the same command history always yields the
same ids (the same log bytes).
"""

from __future__ import annotations

from hashlib import sha1
from typing import Final
from uuid import UUID

import msgspec

COSTART_NAMESPACE = UUID("6f1c2a59-4c3e-5b8e-9d8a-0c057a27e0c1")

# RFC 4122 version 5: clear the version and variant bits of the SHA-1 prefix, then set
# version 5 and the RFC variant -- what `uuid.uuid5` does, with one int round trip
# instead of its bytes checks (ids are made on every submit).
_CLEAR: Final = ~((0xF000 << 64) | (0xC000 << 48))
_SET: Final = (5 << 76) | (0x8000 << 48)


def name_uuid(namespace: bytes, name: str) -> UUID:
    """``uuid.uuid5`` of a namespace given as its 16 bytes."""
    digest = sha1(namespace + name.encode(), usedforsecurity=False).digest()
    return UUID(int=(int.from_bytes(digest[:16], "big") & _CLEAR) | _SET)


_NAMESPACE_BYTES: Final = COSTART_NAMESPACE.bytes


def group_id(submission_seq: int, name: str) -> UUID:
    return name_uuid(_NAMESPACE_BYTES, f"group/{submission_seq}/{name}")


def member_ids(of_group: UUID, member_names: list[str]) -> tuple[UUID, ...]:
    """The ids of a group's members, in order."""
    group = of_group.bytes
    return tuple(name_uuid(group, f"member/{name}") for name in member_names)


_ID_TEXTS: dict[int, str] = {}
"""`id_text`'s cache, by the id's integer: read only through `id_text` (a hot loop binds
the function to a local name)."""
_ID_TEXTS_MAX: Final = 1 << 17


def id_text(aggregate_id: UUID) -> str:
    """An id's canonical text, as the state maps and the in-memory log key it. Cached:
    ``str(UUID)`` is the costliest step of folding or recording an event, and both meet
    each id many times. Cached by the id's integer: hashing and comparing a `UUID` runs
    Python code, an int's does not. Bounded by clearing (any entry can be rebuilt)."""
    text = _ID_TEXTS.get(aggregate_id.int)
    if text is None:
        if len(_ID_TEXTS) >= _ID_TEXTS_MAX:
            _ID_TEXTS.clear()
        text = _ID_TEXTS[aggregate_id.int] = _json_text(aggregate_id)[1:-1].decode()
    return text


_json_text: Final = msgspec.json.Encoder().encode
"""A UUID as a JSON string: ``str(UUID)``'s very text (lowercase, hyphenated), made in C
in a fifth of the time `uuid.UUID.__str__` takes in Python: each new id of a replay or a
restore is written out once (ADR 0130)."""


CLUSTER_ID = name_uuid(_NAMESPACE_BYTES, "cluster")
"""The cluster's own event stream (node status reports)."""
