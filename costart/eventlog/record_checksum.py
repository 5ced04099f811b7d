"""The checksum a stored event carries, on every backend (ADR 0040).

BLAKE2b-128 over the canonical msgpack encoding of the record's fields. The LMDB store
hashes the whole record (its position and chain link included, `costart.store.record_layout`);
a store that assigns positions itself (PostgreSQL) hashes the fields the writer knows,
`content_checksum`. Both write an originator id the same way, `originator_value`.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import Final
from uuid import UUID

import msgspec

CHECKSUM_SIZE: Final = 16
"""Bytes of every record checksum (BLAKE2b-128)."""

_encode = msgspec.msgpack.Encoder().encode


def originator_value(originator_id: UUID | str) -> bytes | str:
    """How an originator id is written inside a record."""
    return originator_id.bytes if isinstance(originator_id, UUID) else originator_id


def content_checksum(
    originator_id: UUID | str, originator_version: int, topic: str, state: bytes
) -> bytes:
    """The record checksum of an event stored where the store itself assigns positions
    (PostgreSQL): BLAKE2b-128 of the same canonical encoding of the same fields as a log
    record's, without the two the writer cannot know (the position and the chain link)."""
    canonical = _encode((originator_value(originator_id), originator_version, topic, state))
    return blake2b(canonical, digest_size=CHECKSUM_SIZE).digest()
