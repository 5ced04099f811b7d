"""Expected runtimes and ends: a declared limit is the basis, else unknown."""

from __future__ import annotations

from uuid import UUID

from costart.domain.expected_runtime import (
    UNKNOWN_END,
    UNKNOWN_RUNTIME,
    ExpectedEnd,
    ExpectedRuntime,
    expected_end,
    expected_runtime,
)
from costart.domain.spec import parse_spec
from costart.domain.states import GroupState, MemberState

HOUR = 3600 * 10**9

SPEC = """
name = "g"
owner = "alice"
[[members]]
name = "limited"
kind = "job"
tasks = 1
max_runtime = "2h"
shape = { gpu = 1 }
[[members]]
name = "open"
kind = "job"
tasks = 1
shape = { gpu = 1 }
"""


def _states() -> tuple[GroupState, MemberState, MemberState]:
    spec = parse_spec(SPEC, "toml")
    group = GroupState(
        id=UUID(int=1), version=1, name="g", spec=spec, submission_seq=1, member_ids=()
    )
    limited = MemberState(id=UUID(int=2), version=1, group_id=group.id, spec=spec.members[0])
    unlimited = MemberState(id=UUID(int=3), version=1, group_id=group.id, spec=spec.members[1])
    return group, limited, unlimited


def test_a_declared_limit_is_the_expected_runtime_and_an_undeclared_one_is_unknown() -> None:
    group, limited, unlimited = _states()
    assert expected_runtime(group.spec, limited.spec) == ExpectedRuntime(2 * HOUR, "limit")
    assert expected_runtime(group.spec, unlimited.spec) == UNKNOWN_RUNTIME


def test_a_running_member_ends_its_limit_after_its_start_and_a_placed_one_after_now() -> None:
    group, limited, unlimited = _states()
    assert expected_end(group, limited, now_ns=5 * HOUR) == ExpectedEnd(7 * HOUR, "limit")
    limited.started_at_ns = 4 * HOUR
    assert expected_end(group, limited, now_ns=5 * HOUR) == ExpectedEnd(6 * HOUR, "limit")
    assert expected_end(group, unlimited, now_ns=5 * HOUR) == UNKNOWN_END


def test_an_end_already_past_is_now_never_the_past() -> None:
    group, limited, _ = _states()
    limited.started_at_ns = 0
    assert expected_end(group, limited, now_ns=3 * HOUR) == ExpectedEnd(3 * HOUR, "limit")
