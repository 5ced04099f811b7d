"""Pend reasons that name the host's other work (ADR 0118): a group waiting for capacity
on a host whose other work holds some of it says so, with the amounts per node, so
whoever reads "not enough free capacity" sees where it went."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from costart.domain import decisions as dec
from costart.placement.allocator import Allocator
from costart.placement.host_allocator import HostAllocator

NOTED_CLASSES: Final = frozenset({"capacity", "topology", "queue"})
"""The reasons outside work can be behind (never ``infeasible``: that is the empty
cluster's answer; nor claims or backoff)."""


def outside_noted(decisions: Sequence[dec.Decision], allocator: Allocator) -> list[dec.Decision]:
    """``decisions`` with the allocator's note of outside work added to each capacity,
    topology or queue reason (unchanged when the allocator has none to give)."""
    note = allocator.outside_note() if isinstance(allocator, HostAllocator) else None
    if note is None:
        return list(decisions)
    noted: list[dec.Decision] = []
    for decision in decisions:
        if isinstance(decision, dec.SetPendReason) and decision.reason.cls in NOTED_CLASSES:
            reason = msgspec.structs.replace(
                decision.reason, message=f"{decision.reason.message}; {note}"
            )
            noted.append(dec.SetPendReason(decision.group, reason))
        else:
            noted.append(decision)
    return noted
