"""An independent copy of a `World`: what a reader folds into on its own (the start
estimator's state, a rebuild from a snapshot), never sharing a value with the original.
"""

from __future__ import annotations

import msgspec

from costart.domain.world import World


def copy_world(world: World) -> World:
    """A deep copy of ``world`` (a msgpack round trip: every value is a msgspec type)."""
    return msgspec.msgpack.decode(msgspec.msgpack.encode(world), type=World)
