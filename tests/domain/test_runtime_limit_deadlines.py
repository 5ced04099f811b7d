"""`next_runtime_deadline` (the simulator's wake-up time) and the cheap due test, on
states built by hand: the earliest running member's start plus its own limit, and
nothing for a group not started or a member not running."""

from __future__ import annotations

from costart.domain.runtime_limits import (
    next_runtime_deadline,
    runtime_limit_may_be_due,
    shortest_limit_ns,
)
from costart.domain.states import GroupState, MemberState
from tests.builders import a_group
from tests.domain.test_fold_handlers import GID, MIDS

SECOND_NS = 10**9
SPEC = (
    a_group()
    .with_member("job", tasks=3, claims=("gpus",), max_runtime="30s")
    .with_member("rs", replicas=3, claims=("gpus",), task_claims=("dev",), max_runtime="20s")
    .build()
)


def states(status: str, job: tuple[str, int | None], rs: tuple[str, int | None]):
    group = GroupState(
        id=GID,
        version=1,
        name=SPEC.name,
        spec=SPEC,
        submission_seq=1,
        member_ids=MIDS,
        status=status,  # type: ignore[arg-type]
        started_at_ns=100,
    )
    members = [
        MemberState(
            id=MIDS[i],
            version=1,
            group_id=GID,
            spec=SPEC.members[i],
            status=s,  # type: ignore[arg-type]
            started_at_ns=at,
        )
        for i, (s, at) in enumerate((job, rs))
    ]
    return group, members


def test_the_next_deadline_is_the_earliest_running_members_start_plus_its_limit():
    group, members = states("RUNNING", ("RUNNING", 100), ("RUNNING", 100 + 15 * SECOND_NS))
    assert next_runtime_deadline(group, members) == 100 + 30 * SECOND_NS
    group, members = states("DEGRADED", ("RUNNING", 100 + 20 * SECOND_NS), ("RUNNING", 100))
    assert next_runtime_deadline(group, members) == 100 + 20 * SECOND_NS


def test_only_running_members_of_a_started_group_have_a_deadline():
    group, members = states("RUNNING", ("SUCCEEDED", 100), ("RUNNING", 100))
    assert next_runtime_deadline(group, members) == 100 + 20 * SECOND_NS
    group, members = states("RUNNING", ("RUNNING", None), ("FAILED", 100))
    assert next_runtime_deadline(group, members) is None
    group, members = states("PLACED", ("RUNNING", 100), ("RUNNING", 100))
    assert next_runtime_deadline(group, members) is None


def test_a_limit_may_be_due_from_the_groups_start_plus_the_shortest_limit():
    assert shortest_limit_ns(SPEC) == 20 * SECOND_NS
    group, _ = states("RUNNING", ("RUNNING", 100), ("RUNNING", 100))
    assert not runtime_limit_may_be_due(group, 100 + 20 * SECOND_NS - 1)
    assert runtime_limit_may_be_due(group, 100 + 20 * SECOND_NS)
    group, _ = states("PLACED", ("RUNNING", 100), ("RUNNING", 100))
    assert not runtime_limit_may_be_due(group, 10**15)
