"""Which lower work may start before a planned gang, as the controller admits it (issue
36, ADR 0147): what the expected start plans each waiting gang with besides its likely
run.

The controller lets lower work onto capacity a ``plan-ahead`` gang's plan claims only
where the run it admits that work on — its declared limit first, else the estimate the
log learned (`gang_runtime` over the history, `ShadowSession.admits`) — ends before the
gang's planned start *as the controller planned it*; a reservation (RESERVING) lends
what it claims to nothing that is not preemptible. The expected start plans each gang
at its likely start over learned runs, which is earlier than the controller's start
over limits: a plan that kept lower work off the gang's capacity from that earlier
start would keep out work the controller lets in, and one that let lower work in for
its likely run would let in work the controller keeps out. So each waiting gang is
planned with two more facts:

- ``admission`` (`admitted_runtime`): the run the controller admits it on, so its fit
  is checked over that run (it still holds its capacity for its likely run only); a
  gang of preemptible members only is admitted whatever its run (it is taken back);
- ``claimed_from`` (`claimed_from`): from when the capacity its plan gives it is kept
  from lower work, when later than its likely start: the controller's planned start as
  the World recorded it in a waiting ``plan-ahead`` gang's pend reason (ADR 0108); None
  (its likely start) where the controller recorded no plan, and for a reservation,
  which lends to no limited work (nor is its capacity planned before its likely start:
  what runs there until then is already in the plan).

Pure: a function of the group's state and the history.
"""

from __future__ import annotations

from costart.domain import expected_runtime as runtimes
from costart.domain.runtime_history import RuntimeHistory
from costart.domain.states import GroupState
from costart.placement.shadow.runtime import gang_runtime


def admitted_runtime(group: GroupState, history: RuntimeHistory) -> runtimes.ExpectedRuntime | None:
    """The run the controller admits ``group`` on before a planned start: its gang's
    runtime by declared limits first, learned estimates else (`gang_runtime`, as
    `costart.placement.plan_ahead.ShadowSession.admits` asks it). None for a gang whose
    every member is preemptible: it is lent capacity whatever its run and stopped when
    the lender's gang fits (`costart.placement.backfill`), so only its likely run counts."""
    if all(m.preemptible for m in group.spec.members):
        return None
    return gang_runtime(group.spec, history)


def claimed_from(group: GroupState) -> int | None:
    """From when lower work is kept off the capacity ``group``'s plan gives it: the
    controller's recorded planned start for a pending gang that plans ahead (the plan
    holds its capacity from the later of that and its likely start), else None."""
    reason = group.pend_reason
    if group.status == "RESERVING" or reason is None:
        return None
    return reason.planned_start_ns
