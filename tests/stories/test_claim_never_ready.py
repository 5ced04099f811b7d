"""A claim that never becomes READY: the barrier times out, the group releases
everything, backs off, and retries; the next attempt starts when the claims are READY."""

from __future__ import annotations

from costart.domain.invariants import check_world
from tests.builders import event_names, ready
from tests.stories.helpers import Story, load


def test_barrier_timeout_release_backoff_and_retry():
    story = Story(load("streaming-pipeline.toml"))  # barrier timeout 3m, backoff 30s
    c = story.controller
    c.submit(story.spec)
    story.place_gang()
    story.ready_all_claims("producer")
    story.ready_all_claims("backfill")
    # consumer's checkpoint-bucket claim never becomes READY
    ready(c, story.ref("consumer"), "topic")
    assert c.tick(story.clock.advance(179)) == []
    events = c.tick(story.clock.advance(1))
    assert event_names(events) == [
        "BarrierTimedOut",
        "MemberReleased",
        "MemberReleased",
        "MemberReleased",
        "PlacementReleased",
    ]
    group = c.group(story.spec.name)
    assert group.status == "PENDING" and group.attempt == 2
    assert group.retry_at_ns == story.clock.now_ns + 30 * 10**9
    assert all(not m.assignments for m in c.members(story.spec.name))
    check_world(c.world)

    story.clock.advance(30)
    story.place_gang()
    story.ready_all_claims()
    started = event_names(story.start_all())
    assert started.count("MemberStarted") == 3  # each member's first task, then the rest
    assert started.count("TaskStarted") == sum(m.min_start - 1 for m in story.spec.members)
    assert story.log().count("BarrierReleased") == 1
    assert c.group(story.spec.name).barrier_released_attempt == 2
