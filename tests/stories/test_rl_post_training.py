"""RL post-training: a rollout replica's crash restarts that replica alone; a trainer
task's crash restarts the whole group, until the group budget is spent and the group
fails."""

from __future__ import annotations

import msgspec

from costart.domain.invariants import check_world
from costart.domain.spec_types import GroupSpec
from tests.builders import event_names, fail, ready
from tests.stories.helpers import Story, load


def running_story(spec: GroupSpec | None = None) -> Story:
    story = Story(spec or load("rl-post-training.toml"))
    story.controller.submit(story.spec)
    story.place_gang()
    story.ready_all_claims()
    story.start_all()
    return story


def test_nothing_starts_until_the_last_claim_of_the_last_member_is_ready():
    story = Story(load("rl-post-training.toml"))
    story.controller.submit(story.spec)
    story.place_gang()
    claims = [(m.name, c) for m in story.spec.members for c in m.claims]
    for member, claim in claims[:-1]:
        ready(story.controller, story.ref(member), claim)
        assert not any(story.controller.may_start(story.ref(m.name)) for m in story.spec.members)
    member, claim = claims[-1]
    assert event_names(ready(story.controller, story.ref(member), claim)) == [
        "ClaimReady",
        "BarrierReleased",
    ]
    assert all(story.controller.may_start(story.ref(m.name)) for m in story.spec.members)


def test_a_rollout_crash_restarts_only_that_rollout_replica():
    story = running_story()
    events = fail(story.controller, story.ref("rollout"), "error", exit_code=1, replica=3)
    assert event_names(events) == ["MemberFailed", "MemberRestarted"]
    assert set(story.status().values()) == {"RUNNING"}  # nothing else stopped
    rollout = story.controller.members(story.spec.name)[1]
    assert (rollout.running_tasks, rollout.task(3).status) == (7, "FAILED")
    story.place_alone("rollout", 3, 1)
    assert event_names(story.start_all()) == ["TaskStarted"]
    rollout = story.controller.members(story.spec.name)[1]
    assert (rollout.running_tasks, rollout.task(3).attempt) == (8, 2)
    check_world(story.controller.world)


def test_a_job_task_crash_restarts_the_whole_job_member():
    """A job's task failure is the job's failure: restart-member re-places every task."""
    spec = load("rl-post-training.toml")
    rule = msgspec.structs.replace(spec.failure.rules[0], members=("trainer",))
    story = running_story(
        msgspec.structs.replace(spec, failure=msgspec.structs.replace(spec.failure, rules=(rule,)))
    )
    events = fail(story.controller, story.ref("trainer"), "error", exit_code=1, replica=2)
    assert event_names(events) == ["MemberFailed", "MemberRestarted"]
    assert story.status()["trainer"] == "RESTARTING"
    trainer = story.controller.members(story.spec.name)[0]
    assert [t.status for t in trainer.tasks] == ["STOPPED", "STOPPED", "FAILED", "STOPPED"]
    story.place_alone("trainer", 0, 4)
    assert not story.controller.may_start(story.ref("trainer"))  # its claims again first
    story.ready_all_claims("trainer")
    assert event_names(story.start_all()) == [
        "MemberStarted",
        "TaskStarted",
        "TaskStarted",
        "TaskStarted",
    ]
    assert story.status()["trainer"] == "RUNNING"
    check_world(story.controller.world)


def test_a_trainer_crash_restarts_the_group_until_the_budget_is_spent():
    story = running_story()
    for attempt in (2, 3):
        events = fail(story.controller, story.ref("trainer"), "oom", exit_code=137)
        assert event_names(events) == [
            "MemberFailed",
            "GroupRestarted",
            "MemberReleased",
            "MemberReleased",
            "MemberReleased",
            "MemberReleased",
            "PlacementReleased",
        ]
        group = story.controller.group(story.spec.name)
        assert (group.status, group.attempt, group.group_restarts) == (
            "PENDING",
            attempt,
            attempt - 1,
        )
        assert not any(story.controller.may_start(story.ref(m.name)) for m in story.spec.members)
        story.place_gang()
        story.ready_all_claims()
        story.start_all()
        assert story.status()["group"] == "RUNNING"
    events = fail(story.controller, story.ref("trainer"), "error", exit_code=1)
    assert event_names(events) == [
        "MemberFailed",
        "MemberStopped",
        "MemberStopped",
        "MemberStopped",
        "GroupFailed",
    ]
    assert story.status() == {
        "group": "FAILED",
        "trainer": "FAILED",
        "rollout": "STOPPED",
        "reward": "STOPPED",
        "reference": "STOPPED",
    }
    assert story.log().count("BarrierReleased") == 3
    check_world(story.controller.world)
