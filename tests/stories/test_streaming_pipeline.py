"""A streaming pipeline: producer and consumer have different owners and profiles, start
together, and restart on their own; the group succeeds when the named job succeeds."""

from __future__ import annotations

from costart.domain.invariants import check_world
from tests.builders import event_names, fail, succeed
from tests.stories.helpers import Story, load


def test_members_keep_their_own_owner_and_profile_and_restart_alone():
    story = Story(load("streaming-pipeline.toml"))
    c = story.controller
    c.submit(story.spec)
    owners = {m.name: (m.spec.owner, m.spec.profile) for m in c.members(story.spec.name)}
    assert owners == {
        "producer": ("ingest-team", "kafka-producer:3.7"),
        "consumer": ("analytics-team", "flink-taskmanager:1.19"),
        "backfill": ("analytics-team", "spark-backfill:3.5"),
    }
    story.place_gang()
    story.ready_all_claims()
    story.start_all()
    assert event_names(fail(c, story.ref("consumer"), "oom")) == [
        "MemberFailed",
        "MemberRestarted",
    ]
    assert story.status()["producer"] == "RUNNING"
    assert story.status()["consumer"] == "RUNNING"  # one replica failed, the rest run on
    story.place_alone("consumer", 0, 1)  # the failed replica, placed again alone
    story.start_all()
    consumer = c.members(story.spec.name)[1]
    assert consumer.restarts == 1 and consumer.running_tasks == len(consumer.assignments)
    done = event_names(succeed(c, story.ref("backfill")))
    assert done[done.index("MemberSucceeded") :] == [
        "MemberSucceeded",
        "MemberStopped",
        "MemberStopped",
        "GroupSucceeded",
    ]
    assert story.status() == {
        "group": "SUCCEEDED",
        "producer": "STOPPED",
        "consumer": "STOPPED",
        "backfill": "SUCCEEDED",
    }
    check_world(c.world)
