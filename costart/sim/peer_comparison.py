"""One policy against the peers' models on one workload (ADR 0115): the best peer per
figure, whether the policy is within a margin of it, and which peers dominate it.

Pure functions over a workload's summary as `bench/bench_scheduling.py` records it:
``{policy: {figure: {"median": ..., "low": ..., "high": ...}}}``, each figure's median
over seeds being what is compared. Every compared figure is better lower (a wait, a
waste). A figure missing for the policy or for any peer raises `MissingFigure` naming
it: a comparison with a peer left out would be silently kinder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import msgspec

from costart.sim.results import PEER_POLICIES

# The figures compared, by short name: the medians over seeds of these summary fields.
COMPARED: Final[dict[str, str]] = {
    "gang_p99": "gang_time_to_start_p99_s",
    "small_p50": "small_time_to_start_p50_s",
    "wasted": "wasted_gpu_hours",
}
# "Within 10% of the best peer's": at most this times its value.
MARGIN: Final = 1.1

Summary = Mapping[str, Mapping[str, Any]]


class MissingFigure(KeyError):
    """A compared figure is not recorded (or has no value) for a policy."""

    def __init__(self, policy: str, figure: str) -> None:
        self.policy = policy
        self.figure = figure
        super().__init__(f"{policy}: no median of {figure}")


class Best(msgspec.Struct, frozen=True):
    """The best peer on one figure (ties: the first in `PEER_POLICIES` order)."""

    peer: str
    value: float


def median(summary: Summary, policy: str, figure: str) -> float:
    """The recorded median of ``figure`` (a key of `COMPARED`) for ``policy``."""
    field = COMPARED[figure]
    try:
        value = summary[policy][field]["median"]
    except (KeyError, TypeError):
        raise MissingFigure(policy, field) from None
    if value is None:
        raise MissingFigure(policy, field)
    return float(value)


def best_peer(summary: Summary, figure: str, peers: Sequence[str] = PEER_POLICIES) -> Best:
    """The peer with the lowest median of ``figure``."""
    if not peers:
        raise ValueError("no peers to compare with")
    values = [(median(summary, peer, figure), i, peer) for i, peer in enumerate(peers)]
    value, _, peer = min(values)
    return Best(peer, value)


def within_margin(measured: float, best: float) -> bool:
    """Is ``measured`` at most `MARGIN` times ``best`` (lower is better)?"""
    return measured <= MARGIN * best


def dominating_peers(
    summary: Summary,
    policy: str,
    figures: Sequence[str],
    peers: Sequence[str] = PEER_POLICIES,
) -> list[str]:
    """The peers at least as good as ``policy`` on every one of ``figures`` and strictly
    better on one (in ``peers`` order); empty: ``policy`` is not dominated."""
    mine = {f: median(summary, policy, f) for f in figures}
    out = []
    for peer in peers:
        theirs = {f: median(summary, peer, f) for f in figures}
        if all(theirs[f] <= mine[f] for f in figures) and any(theirs[f] < mine[f] for f in figures):
            out.append(peer)
    return out
