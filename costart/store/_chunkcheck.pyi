"""Types of the compiled record check (`_chunkcheck.c`, ADR 0155)."""

from typing import TypeVar

_Record = TypeVar("_Record")

def check(
    values: list[bytes], expect: int, prev: bytes | None, record_type: type[_Record], /
) -> tuple[list[_Record], bytes | None]:
    """The records of ``values`` (checksum, envelope, position ``expect`` on, chain from
    ``prev``) up to the first the plain scan must read, and the last checksum."""
