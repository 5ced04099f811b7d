"""The validated, normalized group spec: what `GroupSubmitted` carries and the domain reads.

Durations are integer nanoseconds, defaults are filled in, and every member's counts are
explicit, so nothing downstream re-derives a default (which could drift between versions
and break byte-exact replay).
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from costart.domain.run_table import RunSpec

MemberKind = Literal["job", "replica-set"]
PlacementMode = Literal["atomic", "reserve", "reserve-backfill", "plan-ahead"]
TopologyPolicy = Literal["pack", "spread"]
FailureAction = Literal["fail-group", "restart-member", "restart-group", "tolerate"]
# "refused": the node would not run the task as asked (no account for its owner, an
# account it may not use, a secret it cannot resolve, a path outside its work root).
FailureReason = Literal[
    "error", "oom", "node-lost", "preempted", "claim-failed", "max-runtime", "refused"
]
RuleReason = Literal[
    "error", "oom", "node-lost", "preempted", "claim-failed", "max-runtime", "refused", "any"
]
SuccessWhen = Literal["all-jobs", "any-job", "members"]

MEMBER_KINDS: Final = ("job", "replica-set")
PLACEMENT_MODES: Final = ("atomic", "reserve", "reserve-backfill", "plan-ahead")
# Modes that open a reservation when the gang does not fit at once.
RESERVING_MODES: Final = frozenset({"reserve", "reserve-backfill", "plan-ahead"})
# Modes whose reservations lend capacity to lower work that ends in time (ADR 0045, 0108).
LENDING_MODES: Final = frozenset({"reserve-backfill", "plan-ahead"})
TOPOLOGY_POLICIES: Final = ("pack", "spread")
FAILURE_ACTIONS: Final = ("fail-group", "restart-member", "restart-group", "tolerate")
FAILURE_REASONS: Final = (
    "error",
    "oom",
    "node-lost",
    "preempted",
    "claim-failed",
    "max-runtime",
    "refused",
)
RULE_REASONS: Final = (*FAILURE_REASONS, "any")
SUCCESS_WHENS: Final = ("all-jobs", "any-job", "members")
# Reasons that are the cluster's doing, not the workload's: they never consume a budget.
BUDGET_FREE_REASONS: Final = frozenset({"node-lost", "preempted"})
# Budgets a spec leaves out (ADR 0071). A budget counts what it allows: 0 allows none.
# A restart-member rule without max_restarts restarts each member this many times:
DEFAULT_MAX_RESTARTS: Final = 3
# failure.max_group_restarts left out, when the default action or a rule is restart-group:
DEFAULT_MAX_GROUP_RESTARTS: Final = 3
# How `PlacementPolicy.max_attempts` records "no limit" (placement.max_attempts left out;
# a spec may not write 0). The stored form since the first release: old logs keep it.
NO_ATTEMPT_LIMIT: Final = 0


class Shape(msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True, omit_defaults=True):
    """Resources of one task or replica."""

    gpu: int = 0
    cpu: int = 0
    mem_gb: int = 0
    gpu_type: str | None = None


class Topology(
    msgspec.Struct, frozen=True, gc=False, forbid_unknown_fields=True, omit_defaults=True
):
    """Pack into (or spread across) domains of one topology level."""

    level: str
    policy: TopologyPolicy = "pack"
    required: bool = False


class MemberSpec(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """One member. ``count`` is a job's tasks or a replica set's desired replicas;
    for a job ``min_start == min_running == count``. ``claims`` are the member's (one
    report each); ``task_claims`` are each task's own (a device healthy on its node:
    one report per task). ``max_runtime_ns``: the declared run-time limit (the member
    fails with reason ``max-runtime`` when it has run that long); ``preemptible``: a
    backfill reservation may stop it (reason ``preempted``) to take its capacity back.
    Both are left out of the encoding at their defaults, so older specs keep their bytes."""

    name: str
    kind: MemberKind
    owner: str
    profile: str
    count: int
    min_start: int
    min_running: int
    shape: Shape
    topology: Topology | None = None
    placement_group: str | None = None
    claims: tuple[str, ...] = ()
    task_claims: tuple[str, ...] = ()
    max_runtime_ns: int | None = None
    preemptible: bool = False
    run: RunSpec | None = None
    """How a node agent runs each task (`costart.domain.run_table`); never executed by
    the controller. Left out of the encoding when absent, so a spec without one keeps
    the bytes it had before run tables existed."""


class PlacementPolicy(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """``max_attempts``: placement attempts allowed, `NO_ATTEMPT_LIMIT` (0) for none."""

    mode: PlacementMode
    timeout_ns: int
    backoff_ns: int
    backoff_max_ns: int
    max_attempts: int
    topology: Topology | None = None
    placement_group: str | None = None


class BarrierPolicy(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    timeout_ns: int


class FailureRule(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """First matching rule wins. Empty ``members`` matches every member.
    ``max_restarts``: restarts of each member a restart-member rule allows (0: none),
    resolved at submit (`DEFAULT_MAX_RESTARTS` when the spec left it out, ADR 0071)."""

    members: tuple[str, ...]
    reasons: tuple[RuleReason, ...]
    action: FailureAction
    max_restarts: int = 0


class FailurePolicy(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    """``max_group_restarts``: restarts of the whole group allowed (0: none), resolved at
    submit (`DEFAULT_MAX_GROUP_RESTARTS` when left out and restart-group is used).
    ``default_max_restarts``: restarts of each member the ``default`` action allows when
    it is restart-member (`DEFAULT_MAX_RESTARTS` when left out); left out of the
    encoding at 0, the budget every default restart-member had before ADR 0071, so
    older specs keep their bytes and their meaning."""

    default: FailureAction
    max_group_restarts: int
    rules: tuple[FailureRule, ...] = ()
    default_max_restarts: int = 0


class SuccessPolicy(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    when: SuccessWhen
    members: tuple[str, ...] = ()


class GroupSpec(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    name: str
    owner: str
    priority: int
    placement: PlacementPolicy
    barrier: BarrierPolicy
    failure: FailurePolicy
    success: SuccessPolicy
    members: tuple[MemberSpec, ...]
    labels: tuple[tuple[str, str], ...] = ()
    """Sorted by key (`costart.domain.labels`); left out of the encoding when empty, so
    a spec without labels keeps the bytes it had before labels existed."""

    def member(self, name: str) -> MemberSpec:
        for member in self.members:
            if member.name == name:
                return member
        raise KeyError(name)
