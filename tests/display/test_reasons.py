"""Reasons that are true now: rendered from stored facts at the time they are read."""

from __future__ import annotations

import pytest

from costart.display import group_reason, member_reason, queue_text, reason_text
from costart.domain.events import PendReason

S = 10**9
NOW = 1_796_134_690 * S  # 2026-12-01T14:18:10Z


def test_a_backoff_says_when_it_retries_and_how_long_is_left() -> None:
    reason = PendReason("backoff", "backing off (attempt 2)", until_ns=NOW + 40 * S)
    assert reason_text(reason, NOW) == (
        "backoff: backing off (attempt 2); retry in 40s (at 2026-12-01T14:18:50Z)"
    )
    assert reason_text(reason, NOW + 41 * S) == (
        "backoff: backing off (attempt 2); retry at the next session"
    )


def test_a_planned_start_says_when_and_on_what_it_rests() -> None:
    reason = PendReason(
        "capacity",
        "planned ahead: waiting for running work to end; w: 4×{gpu:8} on its planned nodes",
        planned_start_ns=NOW + 6000 * S,
        planned_basis="limit",
    )
    assert reason_text(reason, NOW).endswith(
        "; planned to start in 1h40m (at 2026-12-01T15:58:10Z) by declared limits"
    )
    estimated = PendReason(
        "capacity", "planned ahead", planned_start_ns=NOW, planned_basis="estimate"
    )
    assert reason_text(estimated, NOW + S) == (
        "capacity: planned ahead; planned to start now by runtime estimates"
    )


def test_a_reason_from_an_older_log_shows_its_raw_time_as_a_clock_time() -> None:
    old = PendReason("backoff", "backing off until t=2245433786222ns (attempt 2)")
    assert reason_text(old, NOW) == "backoff: backing off until t+37m25s (attempt 2)"


@pytest.mark.parametrize(
    ("position", "ahead", "text"),
    [
        (0, (), "#1 (head of the queue)"),
        (1, ("g1",), "#2 (behind g1)"),
        (5, ("g1", "g2", "g3"), "#6 (behind g1, g2, g3 and 2 more)"),
        (2, (), "#3 (behind 2 groups)"),
    ],
)
def test_queue_positions_are_counted_from_one_with_the_groups_ahead(
    position: int, ahead: tuple[str, ...], text: str
) -> None:
    assert queue_text(PendReason("queue", "x", queue_position=position, ahead=ahead)) == text


STALE = PendReason("capacity", "not enough free capacity")


@pytest.mark.parametrize(
    ("state", "pend", "last", "retry_ns", "text"),
    [
        ("SUCCEEDED", STALE, "trainer: error", 0, "succeeded"),
        ("CANCELLED", STALE, "ReservationTimedOut", 0, "cancelled"),
        ("FAILED", None, "trainer: oom", 0, "failed: trainer: oom"),
        ("RUNNING", None, "trainer: error", 0, "-"),
        ("DEGRADED", None, "rollout: 3/4 running", 0, "degraded: rollout: 3/4 running"),
        (
            "PENDING",
            None,
            "BarrierTimedOut",
            NOW + 60 * S,
            "backoff: released after: BarrierTimedOut; retry in 1m00s (at 2026-12-01T14:19:10Z)",
        ),
        (
            "PENDING",
            PendReason("claims", "placed; waiting for claims: t/gpus"),
            None,
            0,
            "waiting for the next scheduling session",
        ),
        ("PENDING", STALE, None, 0, "capacity: not enough free capacity"),
    ],
)
def test_a_group_reason_is_true_in_its_state(
    state: str, pend: PendReason | None, last: str | None, retry_ns: int, text: str
) -> None:
    assert group_reason(state, pend, last, retry_ns, NOW) == text


def test_a_member_shows_its_terminal_cause_not_an_old_failure() -> None:
    assert member_reason("SUCCEEDED", "node-lost") == "succeeded"
    assert member_reason("FAILED", "oom") == "failed: oom"
    assert member_reason("STOPPED", "group succeeded") == "stopped: group succeeded"
    assert member_reason("RUNNING", "node-lost") == "last failure: node-lost"
    assert member_reason("PENDING", None) == "-"
