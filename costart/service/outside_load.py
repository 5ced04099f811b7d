"""A host's other work on a node, as the node's agent reports it (ADR 0118): handed to
the placement step's allocator, which counts it out of the node's free capacity from
the next scheduling session on and names it in the pend reasons of groups that wait
for capacity. Soft state, like heartbeats: never written to the log (the pend reasons
that it shapes are), re-sent by the agent on every pass, and gone with the server
(the next pass reports it to the new leader)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from costart.controller import Controller
from costart.domain.capacity import Capacity
from costart.domain.errors import Conflict


@runtime_checkable
class OutsideReports(Protocol):
    """Where reported outside use goes (`costart.placement.ReportedLoad`)."""

    def report(self, node: str, use: Capacity, source: str) -> None:
        """``node``'s outside use is now ``use``, as ``source`` counts it."""

    def reported(self, node: str) -> Capacity:
        """What was last reported for ``node`` (none: zero)."""


def outside_reports(controller: Controller) -> OutsideReports:
    """The step's sink for outside use; `Conflict` when this server's placement takes
    none (no cluster, or a placement factory whose allocator reads no reports)."""
    allocator = getattr(controller.placement, "allocator", None)
    load = getattr(allocator, "load", None)
    if not isinstance(load, OutsideReports):
        raise Conflict(
            "this server's placement takes no reported outside load (it needs the default "
            "placement over a cluster file)"
        )
    return load
