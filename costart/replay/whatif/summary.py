"""A short tally of a log's groups, for the recorded-vs-what-if lines."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from costart.domain import events as ev
from costart.domain.ids import id_text
from costart.replay.whatif.decisions import Divergence, decisions, differing, first_divergence
from costart.sim.metrics import Original


class Tally(msgspec.Struct, frozen=True):
    """How many groups a log submitted, started (a barrier released), and ended how;
    ``refused``: groups the cluster could never fit (never in a log)."""

    submitted: int
    started: int
    succeeded: int
    failed: int
    cancelled: int
    refused: int = 0


def tally_of_runs(originals: Sequence[Original]) -> Tally:
    """A re-run's tally by the workload's own groups, as the simulator followed them: a
    policy that splits a group into units (``independent``) still counts it once."""
    outcomes = [o.outcome for o in originals]
    return Tally(
        submitted=len(originals) - outcomes.count("rejected"),
        started=sum(1 for o in originals if o.started_ns is not None),
        succeeded=outcomes.count("succeeded"),
        failed=outcomes.count("failed"),
        cancelled=outcomes.count("cancelled"),
        refused=outcomes.count("rejected"),
    )


def tally(events: Iterable[tuple[int, ev.DomainEvent]]) -> Tally:
    submitted: set[str] = set()
    started: set[str] = set()
    ended: dict[type[ev.DomainEvent], int] = {}
    for _, event in events:
        kind = type(event)
        if kind is ev.GroupSubmitted:
            submitted.add(id_text(event.group_id))
        elif kind is ev.BarrierReleased:
            started.add(id_text(event.group_id))
        elif kind in (ev.GroupSucceeded, ev.GroupFailed, ev.GroupCancelled):
            ended[kind] = ended.get(kind, 0) + 1
    return Tally(
        submitted=len(submitted),
        started=len(started),
        succeeded=ended.get(ev.GroupSucceeded, 0),
        failed=ended.get(ev.GroupFailed, 0),
        cancelled=ended.get(ev.GroupCancelled, 0),
    )


class Compared(msgspec.Struct, frozen=True):
    """The recorded log beside the what-if one: each one's tally, how many decisions
    each made, how many one has and the other has not, and where they first part."""

    recorded: Tally
    whatif: Tally
    recorded_decisions: int
    whatif_decisions: int
    differing: int
    divergence: Divergence | None


def compare(
    recorded: list[tuple[int, ev.DomainEvent]],
    whatif: list[tuple[int, ev.DomainEvent]],
    runs: Sequence[Original] | None = None,
) -> Compared:
    """Compare two logs' events (each as ``(position, event)`` in log order); the
    what-if's groups tallied from the re-run's ``runs`` when given, else its log."""
    a, b = decisions(recorded), decisions(whatif)
    return Compared(
        tally(recorded),
        tally(whatif) if runs is None else tally_of_runs(runs),
        len(a),
        len(b),
        differing(a, b),
        first_divergence(a, b),
    )
