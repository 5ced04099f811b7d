"""May lower work start now without delaying any planned reservation?

Work that would start now on some nodes, for its expected runtime, may start when, on
each of those nodes, what it uses plus the planned use at every time of its run stays
within the node's capacity. That is the rule "it ends (by its limit, or by an estimate)
before the start of every reservation whose planned capacity it uses, or it only uses
capacity those reservations do not need", checked node by node over the profile that
holds the planned reservations. Work whose runtime is unknown runs without end in the
plan, so it may only use capacity that no planned start needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from costart.domain import expected_runtime as runtimes
from costart.placement.capacity import Vec
from costart.placement.shadow.plan import held_until
from costart.placement.shadow.profile import CapacityProfile


class Admission(NamedTuple):
    """Why the work may start: the basis of its runtime, and until when it was admitted
    (None: it uses only capacity no plan needs, for as long as it runs)."""

    basis: runtimes.Basis
    until_ns: int | None


def admits(
    profile: CapacityProfile,
    uses: Mapping[int, Vec],
    runtime: runtimes.ExpectedRuntime,
    lender: str | None = None,
) -> Admission | None:
    """The admission of work using ``uses`` (per node) from now for ``runtime``, or None
    if it would overcommit some node at some time of its run (delaying a plan). What
    ``lender`` holds until its planned start counts as free: it is what it lends."""
    now = profile.now_ns
    end = None if runtime.runtime_ns is None else now + runtime.runtime_ns
    for node in sorted(uses):
        want = uses[node]
        cap = profile.capacity[node]
        peak = profile.peak(node, now, end, None if lender is None else held_until(lender))
        if any(peak[d] + want[d] > cap[d] for d in range(3)):
            return None
    return Admission(runtime.basis, end)
