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
