"""What the simulator runs: group arrivals with each member's run time.

A workload is plain data (msgspec structs) so it can be generated from a seed, imported
from a real trace, printed, and compared between runs.
"""

from __future__ import annotations

import msgspec

from costart.domain.spec_types import GroupSpec


class MemberRun(msgspec.Struct, frozen=True):
    """How a member behaves once started. ``runtime_ns`` None: a service that runs until
    the group ends; ``fails_after_ns``: it crashes that long after its start."""

    runtime_ns: int | None = None
    fails_after_ns: int | None = None
    failure_reason: str = "error"


class Arrival(msgspec.Struct, frozen=True):
    """A group submitted at ``at_ns``. ``lifetime_ns``: a group of services only is
    cancelled that long after its start (the trace's deletion time)."""

    at_ns: int
    spec: GroupSpec
    runs: dict[str, MemberRun]
    claim_delay_ns: int = 0
    lifetime_ns: int | None = None


class Workload(msgspec.Struct):
    name: str
    arrivals: list[Arrival]
    assumptions: list[str] = msgspec.field(default_factory=list)
