"""Expected runtimes and ends: a declared limit is the basis, else an estimate learned
from the history (slipping once a run is past it), else unknown."""

from __future__ import annotations

from uuid import UUID

import msgspec

from costart.domain.expected_runtime import (
    UNKNOWN_END,
    UNKNOWN_RUNTIME,
    ExpectedEnd,
    ExpectedRuntime,
    RuntimeEstimate,
    estimate_record,
    expected_end,
    expected_runtime,
)
from costart.domain.runtime_history import RuntimeHistory
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


def _history(*hours: int, key: str = "alice g open") -> RuntimeHistory:
    history = RuntimeHistory()
    for runtime in hours:
        history.learn(key, runtime * HOUR)
    return history


def test_an_undeclared_limit_is_estimated_from_enough_history_and_a_limit_comes_first() -> None:
    group, limited, unlimited = _states()
    history = _history(1, 4, 2)
    assert expected_runtime(group.spec, unlimited.spec, history) == ExpectedRuntime(
        4 * HOUR, "estimate"
    )
    assert expected_runtime(group.spec, unlimited.spec, _history(1, 4)) == UNKNOWN_RUNTIME
    assert expected_runtime(group.spec, unlimited.spec, _history(1, 4, 2, key="bob g open")) == (
        UNKNOWN_RUNTIME
    )
    limited_history = _history(1, 1, 1, key="alice g limited")
    assert expected_runtime(group.spec, limited.spec, limited_history) == ExpectedRuntime(
        2 * HOUR, "limit"
    )


def test_a_run_within_its_estimate_ends_at_it_and_one_past_it_slips_step_by_step() -> None:
    group, _, unlimited = _states()
    history = _history(1, 2, 3, 5, 8)  # p80: 5h
    assert expected_end(group, unlimited, 10 * HOUR, history) == ExpectedEnd(15 * HOUR, "estimate")
    unlimited.started_at_ns = 10 * HOUR
    assert expected_end(group, unlimited, 12 * HOUR, history) == ExpectedEnd(15 * HOUR, "estimate")
    # Past its estimate: the next longer run seen (8h), then twice what it has run.
    assert expected_end(group, unlimited, 15 * HOUR, history) == ExpectedEnd(18 * HOUR, "estimate")
    assert expected_end(group, unlimited, 18 * HOUR, history) == ExpectedEnd(26 * HOUR, "estimate")
    assert expected_end(group, unlimited, 21 * HOUR, history) == ExpectedEnd(32 * HOUR, "estimate")


def test_the_record_of_an_answer_says_what_it_rests_on() -> None:
    group, limited, unlimited = _states()
    history = _history(1, 2, 3, 5, 8)
    assert estimate_record(group, unlimited, 0) is None
    assert estimate_record(group, limited, HOUR, history) == RuntimeEstimate(
        member="limited", runtime_ns=2 * HOUR, basis="limit"
    )
    unlimited.started_at_ns = HOUR
    assert estimate_record(group, unlimited, 2 * HOUR, history) == RuntimeEstimate(
        member="open",
        runtime_ns=5 * HOUR,
        basis="estimate",
        samples=5,
        percentile=80,
        key="alice g open",
    )
    slipped = estimate_record(group, unlimited, 7 * HOUR, history)
    assert slipped == RuntimeEstimate(
        member="open",
        runtime_ns=8 * HOUR,
        basis="estimate",
        samples=5,
        percentile=80,
        key="alice g open",
        slipped=True,
    )
    # It is a value an event can carry: it round-trips through the log's encoding.
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(slipped), type=RuntimeEstimate) == slipped
