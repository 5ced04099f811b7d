"""What a node offers: GPUs, CPUs and memory, in whole units.

The cluster file gives each node one, placement counts in them, and the invariant
"holds + placements on a node never exceed its capacity" (`costart.domain.invariants`)
checks against them.
"""

from __future__ import annotations

import msgspec

__all__ = ["Capacity"]


class Capacity(msgspec.Struct, frozen=True):
    """One node's capacity: ``gpu`` and ``cpu`` counts and ``mem_gb`` gigabytes."""

    gpu: int = 0
    cpu: int = 0
    mem_gb: int = 0
