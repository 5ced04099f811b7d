"""Which snapshot schema this release writes, and how an older snapshot is compared.

A snapshot records the canonical encoding of the whole state. When the encoding rule or
the state's fields change, the schema number moves on, and a snapshot of an older schema
is compared (by `replay verify`) through `recorded_form`: what a snapshot of that schema
holds of a state rebuilt by this release. Snapshots of an older schema carry on being
restorable as long as decoding them gives the whole state (see `restorable`).

Schemas:
1. the first release: every field encoded, defaults included.
2. spec and event structs leave fields at their default out of the encoding
   (``omit_defaults``), so a field added later with a default does not change old
   records; the values are those of schema 1.
"""

from __future__ import annotations

from typing import Final

from costart.domain.world import World
from costart.store.codec import canonical_encode

SNAPSHOT_SCHEMA: Final = 2
"""The schema of the snapshots this release writes."""


def recorded_form(world: World, schema: int) -> bytes:
    """The canonical bytes of ``world`` as a snapshot of ``schema`` records them, decoded
    and encoded again by this release (for schema 1 and 2: the whole state)."""
    if not 1 <= schema <= SNAPSHOT_SCHEMA:
        raise ValueError(f"snapshot schema {schema} is unknown to this release")
    return canonical_encode(world)


def restorable(schema: int) -> bool:
    """Does a snapshot of ``schema`` decode to the whole state of this release?"""
    return 1 <= schema <= SNAPSHOT_SCHEMA
