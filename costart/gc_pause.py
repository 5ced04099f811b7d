"""`gc_paused`: the cyclic garbage collector paused around work that makes many
objects and no reference cycles.

CPython runs a collection every few hundred container objects made, and a collection
of the oldest generation walks every object the process keeps. Work that makes tens of
thousands of short-lived tuples (a scheduling session over a large cluster) or keeps
many new objects (decoding a snapshot) pays for passes that find nothing. Pausing the
collector there is sound only while the work leaves (next to) no cycles: each caller's
tests hold it to that. Objects freed by reference counting are freed as usual; the
collector resumes where it left off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (left paused if it was)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def promote_tracked() -> bool:
    """Move every object the collector tracks into its oldest generation without walking
    them, and start the count of new objects afresh: what a collection of the young
    generations does to objects that survive it, less its walk over every reference
    they hold. For work that leaves large, long-lived containers (a scheduling step's
    per-node arrays, made afresh when it starts over): the first young collection after
    it walked each of their references for nothing.

    A young object that is already garbage in a cycle is promoted too, and waits for the
    next collection of the oldest generation: call this after rare, large work, not on
    a hot path. Does nothing (returns False) while the process has frozen objects
    (`gc.freeze`): thawing them is not this function's to do."""
    if gc.get_freeze_count():
        return False
    gc.freeze()  # every generation into the permanent one, the young count reset
    gc.unfreeze()  # ... and the permanent one into the oldest, unwalked
    return True
