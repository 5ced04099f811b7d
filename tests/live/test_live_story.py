"""The live demo's narration of watched events: readable times (ISO-8601 UTC and an
offset from the submission, never raw nanoseconds), and what the run has seen."""

from __future__ import annotations

import re
from typing import Any

from costart.cli.live.story import Story
from costart.rest.client import WatchEvent

T0 = 1_764_600_000_123_000_000  # 2025-12-01T14:40:00.123Z
SECOND = 10**9


def watched(position: int, kind: str, member: str | None, at_ns: int, **fields: Any) -> WatchEvent:
    return WatchEvent(
        position=position,
        type=kind,
        group="rl-live",
        member=member,
        at="",
        event={"type": kind, "at_ns": at_ns, **fields},
    )


RUN = [
    watched(1, "GroupSubmitted", None, T0, spec={"name": "rl-live"}, actor=["user", "alice"]),
    watched(2, "PendReasonChanged", None, T0 + SECOND // 2, reason={"class": "claims"}),
    watched(3, "MemberPlaced", "rollout", T0 + SECOND, assignments=[[0, "node-1"], [1, "node-2"]]),
    watched(4, "GroupPlaced", None, T0 + SECOND, attempt=1, barrier_deadline_ns=T0 + 120 * SECOND),
    watched(
        5,
        "ClaimReady",
        "rollout",
        T0 + 3 * SECOND,
        claim="weights",
        actor=["agent", "agent-node-1"],
    ),
    watched(6, "BarrierReleased", None, T0 + 3 * SECOND, attempt=1),
    watched(7, "MemberStarted", "rollout", T0 + 3 * SECOND, task=0, attempt=1),
    watched(8, "TaskStarted", "rollout", T0 + 3 * SECOND, task=1, attempt=1),
    watched(
        9,
        "MemberFailed",
        "rollout",
        T0 + 5 * SECOND,
        index=0,
        reason="error",
        exit_code=137,
        action="restart-member",
        attempt=1,
    ),
    watched(10, "MemberRestarted", "rollout", T0 + 5 * SECOND, restarts=0, counted=False),
    watched(10, "MemberPlaced", "rollout", T0 + 6 * SECOND, assignments=[[0, "node-3"]]),
    watched(11, "TaskStarted", "rollout", T0 + 6 * SECOND, task=0, attempt=2),
    watched(12, "MemberStopped", "rollout", T0 + 75 * SECOND, reason="group succeeded"),
    watched(13, "GroupSucceeded", None, T0 + 75 * SECOND),
]


def told(story: Story) -> list[str]:
    return [line for event in RUN if (line := story.line(event)) is not None]


def test_the_story_says_each_state_in_order_with_readable_times() -> None:
    lines = told(Story())
    assert lines[0].startswith("2025-12-01T14:40:00.123Z")
    assert "+0s" in lines[0] and "PENDING" in lines[0] and "[user:alice]" in lines[0]
    assert "placed task 0 on node-1, task 1 on node-2" in lines[1]
    assert "PLACED" in lines[2]
    assert "claim weights READY" in lines[3] and "[agent:agent-node-1]" in lines[3]
    assert "barrier released" in lines[4] and "RUNNING" in lines[4]
    assert "rollout task 0 FAILED (error, exit 137): restart-member" in lines[7]
    assert "rollout relaunching (not charged to its restart budget)" in lines[8]
    assert "+1m15s" in lines[-1] and "SUCCEEDED" in lines[-1]
    for line in lines:
        assert not re.search(r"\d{10,}", line), f"raw nanoseconds in {line!r}"


def test_a_pend_reason_change_or_a_member_created_is_not_a_line_of_its_own() -> None:
    story = Story()
    assert story.line(RUN[0]) is not None
    assert story.line(watched(2, "MemberCreated", "rollout", T0, spec={})) is None
    assert story.line(RUN[1]) is None


def test_the_story_keeps_which_tasks_run_and_how_the_group_ended() -> None:
    story = Story()
    told(story)
    assert story.running == {("rollout", 0): 2, ("rollout", 1): 1}
    assert story.failures == [("rollout", 0, "error")]
    assert story.barrier_released == 1
    assert story.stopped == ["rollout"]
    assert story.ended == "SUCCEEDED"


def test_a_task_counts_as_running_only_until_it_fails() -> None:
    story = Story()
    for event in RUN[:9]:
        story.line(event)
    assert story.running == {("rollout", 1): 1}
