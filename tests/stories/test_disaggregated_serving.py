"""Disaggregated serving: prefill and decode pools start together at their quorum, then
scale independently (scale-up places single replicas, never a gang)."""

from __future__ import annotations

from costart.domain.invariants import check_world
from tests.builders import USER, event_names, fail
from tests.stories.helpers import Story, load


def test_prefill_and_decode_start_together_then_scale_on_their_own():
    story = Story(load("disaggregated-serving.toml"))
    c = story.controller
    c.submit(story.spec)
    story.place_gang()
    story.ready_all_claims("prefill")
    assert not c.may_start(story.ref("prefill"))  # decode is not READY: no partial start
    events = story.ready_all_claims("decode")
    assert event_names(events)[-1] == "BarrierReleased"
    story.start_all()
    placed = {m.name: len(m.assignments) for m in c.members(story.spec.name)}
    assert placed == {"router": 1, "prefill": 2, "decode": 4}

    # Up to the desired count, one replica decision at a time; the other pool is untouched.
    for index in (2, 3):
        assert event_names(story.place_alone("prefill", index, 1)) == ["MemberPlaced"]
    assert event_names(c.scale(story.ref("decode"), 3, actor=USER)) == ["MemberScaled"]
    decode = c.members(story.spec.name)[2]
    assert (decode.desired, sorted(a.index for a in decode.assignments)) == (3, [0, 1, 2])
    c.scale(story.ref("prefill"), 6, actor=USER)
    story.place_alone("prefill", 4, 2)
    prefill = c.members(story.spec.name)[1]
    assert (prefill.desired, len(prefill.assignments), prefill.status) == (6, 6, "RUNNING")
    assert story.status()["group"] == "RUNNING"
    check_world(c.world)


def test_losing_decode_replicas_degrades_then_fails_below_the_floor():
    story = Story(load("disaggregated-serving.toml"))
    c = story.controller
    c.submit(story.spec)
    story.place_gang()
    story.ready_all_claims()
    story.start_all()
    decode = c.members(story.spec.name)[2]
    first, second, third = (a.index for a in decode.assignments[:3])
    assert event_names(fail(c, story.ref("decode"), "oom", replica=first)) == [
        "MemberFailed",
        "GroupDegraded",
    ]
    fail(c, story.ref("decode"), "oom", replica=second)
    assert story.status()["group"] == "DEGRADED"
    events = fail(c, story.ref("decode"), "error", replica=third)
    assert event_names(events)[-1] == "GroupFailed"
    assert story.status() == {
        "group": "FAILED",
        "router": "STOPPED",
        "prefill": "STOPPED",
        "decode": "STOPPED",
    }
    check_world(c.world)
