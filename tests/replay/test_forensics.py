"""Replay tools over a log: rebuild to a position or time, why, diff, export, timeline."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.domain.decisions import SetPendReason
from costart.domain.errors import NotFound
from costart.domain.events import PendReason
from costart.replay.diff import diff_worlds
from costart.replay.export import export_jsonl
from costart.replay.rebuild import rebuild, rebuild_until_time
from costart.replay.source import RecorderSource
from costart.replay.timeline import group_timeline
from costart.replay.timeline_html import render_html
from costart.replay.why import why
from costart.store.codec import canonical_encode
from tests.builders import ManualClock, a_group, new_controller

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out.txt"
    controller = run_demo(ROOT / "scenarios" / "rl-post-training.toml", Console(file=out.open("w")))
    return controller, RecorderSource(controller.recorder)


def test_rebuild_to_the_end_equals_the_live_state(demo):
    controller, source = demo
    assert canonical_encode(rebuild(source)) == canonical_encode(controller.world)


def test_rebuild_from_an_earlier_state_equals_rebuild_from_scratch(demo):
    _, source = demo
    middle = rebuild(source, until=12)
    assert middle.position == 12
    assert canonical_encode(rebuild(source, start=middle)) == canonical_encode(rebuild(source))
    assert middle.position == 12  # the start state is not modified


def test_state_at_a_time_shows_the_group_before_its_barrier(demo):
    controller, source = demo
    group = controller.group("grpo-run-42")
    before_start = group.started_at_ns - 1
    world = rebuild_until_time(source, before_start)
    assert world.group_named("grpo-run-42").status == "PLACED"
    # The state holds every event up to that time and none after it.
    assert world.position == max(p for p, e in source.read_events() if e.at_ns <= before_start)
    assert world.position < max(p for p, _ in source.read_events())


def test_diff_names_the_aggregate_and_field(demo):
    _, source = demo
    a, b = rebuild(source, until=5), rebuild(source, until=10)
    changes = diff_worlds(a, b)
    fields = {(c.aggregate, c.field) for c in changes}
    assert ("group grpo-run-42", "status") in fields
    assert ("member grpo-run-42/trainer", "status") in fields
    assert diff_worlds(b, b) == []


def test_export_writes_one_json_line_per_event(demo):
    controller, source = demo
    out = io.BytesIO()
    count = export_jsonl(source, out)
    lines = out.getvalue().splitlines()
    assert count == len(lines) == controller.recorder.max_notification_id()
    first = json.loads(lines[0])
    assert first["position"] == 1 and first["event"]["type"] == "GroupSubmitted"


def test_timeline_has_a_lane_per_member_and_renders_self_contained_html(demo):
    _, source = demo
    timeline = group_timeline(source, "grpo-run-42")
    assert [lane.name for lane in timeline.lanes] == [
        "group",
        "trainer",
        "rollout",
        "reward",
        "reference",
    ]
    rollout = [span.state for span in timeline.lanes[2].spans]
    assert rollout[:3] == ["PENDING", "PLACED", "READY"]
    assert rollout[3:] == ["RUNNING", "STOPPED"]  # a replica failed and was re-placed alone
    failed = [e for e in timeline.events if e.event == "MemberFailed"]
    assert [(e.aggregate, " task 0" in e.detail) for e in failed] == [("rollout", True)]
    assert "(by agent:" in failed[0].detail
    page = render_html(timeline)
    assert (
        page.startswith("<!DOCTYPE html>")
        and "<script" not in page
        and "http" not in page.split("<svg")[0]
    )
    assert page.count("<rect") == sum(len(lane.spans) for lane in timeline.lanes)


def test_why_returns_the_pend_reason_then_and_its_history():
    clock = ManualClock()
    c = new_controller(clock)
    c.submit(a_group("big").with_member("a", gpu=8, tasks=64).build())
    capacity = PendReason(
        "capacity", "a: 64x{gpu:8}; best 40 free", member="a", need="512 gpu", best="320 gpu"
    )
    clock.advance(10)
    c.apply_decisions([SetPendReason("big", capacity)])
    clock.advance(10)
    queue = PendReason("queue", "behind 2 reservations", queue_position=3)
    c.apply_decisions([SetPendReason("big", queue)])
    source = RecorderSource(c.recorder)
    then = why(source, "big", 15 * 10**9)
    assert then.reason == capacity and [h.reason for h in then.history] == [capacity]
    now = why(source, "big", clock.now_ns)
    assert now.reason == queue and len(now.history) == 2
    with pytest.raises(NotFound):
        why(source, "big", 0 - 1)
