"""RL post-training: a rollout crash restarts the rollout alone; a trainer crash restarts
the whole group, until the group budget is spent and the group fails."""

from __future__ import annotations

from costart.domain.invariants import check_world
from tests.builders import event_names, fail, ready
from tests.stories.helpers import Story, load


def running_story() -> Story:
    story = Story(load("rl-post-training.toml"))
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


def test_a_rollout_crash_restarts_only_the_rollout():
    story = running_story()
    events = fail(story.controller, story.ref("rollout"), "error", exit_code=1)
    assert event_names(events) == ["MemberFailed", "MemberRestarted"]
    assert story.status() == {
        "group": "RUNNING",
        "trainer": "RUNNING",
        "rollout": "RESTARTING",
        "reward": "RUNNING",
        "reference": "RUNNING",
    }
    assert not story.controller.may_start(story.ref("rollout"))
    story.place_alone("rollout", 0, 8)
    assert not story.controller.may_start(story.ref("rollout"))  # its claim again first
    story.ready_all_claims("rollout")
    assert event_names(story.start_all()) == ["MemberStarted"]
    assert story.status()["rollout"] == "RUNNING"
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
