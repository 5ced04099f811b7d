"""Backfill into held capacity and declared run-time limits (docs/design.md §4, ADR 0045).

A ``reserve-backfill`` reservation lends what it holds but cannot use yet to lower
groups that will be gone before it needs the capacity (each member declares a
``max_runtime`` that ends before the reservation's expected completion) or that may be
stopped for it (``preemptible``). Three commands, each on one group:

* `lend_holds` — the reservation gives up held tasks (`HoldLent`): from then on that
  capacity is counted once, as the borrower's use, and is still owed to the reservation
  (it claims it every session);
* `place_borrower` — the borrower's whole gang is placed, its events noting the lender;
* `preempt` — when the reservation's gang can start, preemptible work still on its
  nodes is stopped with reason ``preempted``: its own failure policy applies, and a
  preemption never consumes a restart budget (`costart.domain.policy.consumes_budget`).
  Work that is not preemptible is never stopped (ADR 0092): a limited borrower ends by
  its own limit, before the reservation's expected completion. The exception is a
  borrower admitted on a learned runtime estimate, once the until-time its placement
  recorded has passed (ADR 0121).

The limit itself is enforced by `costart.domain.runtime_limits`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from costart.domain import events as ev
from costart.domain.aggregates import GroupUnit
from costart.domain.errors import DomainError, IllegalTransition
from costart.domain.events import Assignment
from costart.domain.failures import fail_member
from costart.domain.scheduling import place_group
from costart.domain.spec_types import LENDING_MODES
from costart.domain.states import GROUP_STARTED, estimate_ran_out
from costart.domain.teardown import release_and_retry

BACKFILL: Final = "reserve-backfill"


def lend_holds(
    unit: GroupUnit, holds: Mapping[str, Sequence[Assignment]], borrower: str, at_ns: int
) -> None:
    """The reservation lends these held tasks (per member) to group ``borrower``."""
    group = unit.group.state
    if group.spec.placement.mode not in LENDING_MODES:
        modes = " or ".join(sorted(LENDING_MODES))
        raise DomainError(f"group {unit.name} is not in {modes} mode: it lends nothing")
    if group.status != "RESERVING":
        raise IllegalTransition(f"group {unit.name}", group.status, "lend held capacity")
    if borrower == unit.name:
        raise DomainError(f"group {unit.name} cannot lend to itself")
    for name in sorted(holds):
        member = unit.member(name)
        held = {a.index: a.node for a in member.state.held}
        for a in holds[name]:
            if held.get(a.index) != a.node:
                raise DomainError(f"member {name}: task {a.index} on {a.node} is not held")
        if holds[name]:
            member.trigger(ev.HoldLent, at_ns, assignments=tuple(holds[name]), borrower=borrower)


def place_borrower(
    unit: GroupUnit,
    assignments: Mapping[str, Sequence[Assignment]],
    lender: str,
    at_ns: int,
    *,
    until_ns: int | None = None,
    estimates: Sequence[ev.RuntimeEstimate] = (),
) -> None:
    """Place a borrower's whole gang on capacity lent by reservation ``lender``. Each
    member is preemptible, declares ``max_runtime``, or — admitted on a learned runtime
    estimate until ``until_ns`` (ADR 0121) — has an estimate record in ``estimates``;
    such a borrower may be stopped by a reservation from ``until_ns`` on."""
    estimated = {e.member for e in estimates if e.basis == "estimate"}
    if until_ns is not None and until_ns <= at_ns:
        raise DomainError(f"group {unit.name}: admitted until {until_ns}, not after {at_ns}")
    if estimates and until_ns is None:
        raise DomainError(f"group {unit.name}: estimates recorded without an admitted-until time")
    for member in unit.group.state.spec.members:
        if member.preemptible or member.max_runtime_ns is not None:
            continue
        if until_ns is None or member.name not in estimated:
            raise DomainError(
                f"member {member.name} neither declares max_runtime nor is preemptible, "
                f"nor was admitted on a runtime estimate: it may not borrow from "
                f"reservation {lender}"
            )
    if until_ns is None:
        unit.set_note(f"on loan from reservation {lender}")
    else:
        unit.set_note(f"on loan from reservation {lender}, on a runtime estimate")
    place_group(unit, assignments, at_ns, admitted_until_ns=until_ns, estimates=tuple(estimates))
    unit.set_note(None)


def preempt(unit: GroupUnit, nodes: Sequence[str], lender: str, at_ns: int) -> None:
    """Stop the group's tasks on ``nodes`` (reason ``preempted``) so that reservation
    ``lender`` can start there. Before its start the group is released and retried (no
    attempt counted); after it, each member with a task there fails by the policy."""
    group = unit.group.state
    overrun = estimate_ran_out(group, at_ns)
    for declared in group.spec.members:
        if not declared.preemptible and not overrun:
            # A declared time limit is not a kill switch (ADR 0092): the limit itself
            # stops the work (`runtime_limits`), a reservation never does. Only a
            # borrower admitted on an estimate that has run out may be (ADR 0121).
            raise DomainError(
                f"member {declared.name} is not preemptible: reservation {lender} "
                f"may not stop group {unit.name}"
            )
    where = frozenset(nodes)
    if overrun and not all(m.preemptible for m in group.spec.members):
        unit.set_note(f"preempted for reservation {lender}: its runtime estimate ran out")
    else:
        unit.set_note(f"preempted for reservation {lender}")
    if group.status == "PLACED":
        release_and_retry(unit, f"preempted for reservation {lender}", at_ns, counts_attempt=False)
    elif group.status in GROUP_STARTED:
        for member in unit.members:
            # One report per task there: a job's first failure is the job's; a replica
            # set loses each replica on those nodes, until the policy ends the group. A
            # member that ended or restarts holds no placement (the fold clears it), so
            # it has no task there.
            while unit.group.state.status in GROUP_STARTED:
                hit = [a.index for a in member.state.assignments if a.node in where]
                if not hit:
                    break
                fail_member(unit, member.name, "preempted", None, min(hit), at_ns)
    else:
        raise IllegalTransition(f"group {unit.name}", group.status, "preempt")
    unit.set_note(None)
