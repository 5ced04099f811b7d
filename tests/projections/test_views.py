"""The views: equal to the controller's state, rebuildable byte for byte, exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.domain.errors import NotFound
from costart.domain.events import DomainEvent
from costart.projections import RecorderSource, Views
from costart.projections.view_builder import SECOND_NS
from tests.builders import USER, ManualClock, new_controller
from tests.hash_seed import stdout_lines
from tests.multi_group_story import run_story

ROOT = Path(__file__).resolve().parents[2]


def story_views(tmp_path: Path, batch_size: int = 3):
    clock = ManualClock()
    controller = new_controller(clock)
    views = Views(tmp_path / "incremental")
    run_story(controller, clock, lambda: views.catch_up(controller, batch_size=batch_size))
    return controller, views


class CrashingSource:
    """Yields the controller's events, then dies after ``limit`` of them in all."""

    def __init__(self, source, limit: int) -> None:
        self.source = source
        self.recorder = source.recorder
        self.limit = limit
        self.given = 0

    def read_events(self, after: int = 0) -> Iterator[tuple[int, DomainEvent]]:
        for item in self.source.read_events(after):
            if self.given == self.limit:
                raise RuntimeError("process died mid-batch")
            self.given += 1
            yield item


class CountingSource:
    def __init__(self, source) -> None:
        self.source = source
        self.recorder = source.recorder
        self.afters: list[int] = []
        self.read = 0

    def read_events(self, after: int = 0) -> Iterator[tuple[int, DomainEvent]]:
        self.afters.append(after)
        for item in self.source.read_events(after):
            self.read += 1
            yield item


def test_views_rebuilt_from_the_log_equal_the_incremental_ones_byte_for_byte(tmp_path):
    controller, views = story_views(tmp_path, batch_size=2)
    with Views(tmp_path / "rebuilt") as rebuilt:
        rebuilt.catch_up(controller)
        assert rebuilt.db.dump() == views.db.dump()
        # and rebuilding in place gives the same bytes again
        views.rebuild(controller, batch_size=7)
        assert rebuilt.db.dump() == views.db.dump()
    assert views.position() == controller.recorder.max_notification_id()


def test_the_group_and_member_views_show_the_controllers_state(tmp_path):
    controller, views = story_views(tmp_path)
    for state in controller.groups():
        row = views.group(state.name)
        assert (row.state, row.attempt, row.owner) == (
            state.status,
            state.attempt,
            state.spec.owner,
        )
        assert row.pend_reason == state.pend_reason
        members = views.members(state.name)
        assert [m.name for m in members] == [m.name for m in controller.members(state.name)]
        for view, live in zip(members, controller.members(state.name), strict=True):
            assert (view.state, view.placed, view.restarts) == (
                live.status,
                len(live.assignments),
                live.restarts,
            )
    g1 = views.group("g1")
    assert g1.state == "RUNNING"
    assert g1.members_by_state == {"RUNNING": 2}
    assert g1.gpu_placed == 2 * 8 + 3 * 1
    rollout = views.members("g1")[1]
    assert rollout.nodes[-1] == "r2-n001" and len(rollout.nodes) == 3
    assert rollout.restarts == 1 and rollout.last_reason == "error"
    assert rollout.claims == {"gpus": "READY"}
    # Per task: replica 0 was placed again by the member's second placement, and runs.
    assert (rollout.attempt, rollout.running) == (2, 3)
    tasks = {t.index: (t.node, t.attempt, t.state) for t in rollout.tasks}
    assert tasks[0] == ("r2-n001", 2, "RUNNING")
    assert [tasks[i][1:] for i in (1, 2)] == [(1, "RUNNING"), (1, "RUNNING")]


def test_groups_filter_by_owner_and_state_in_submission_order(tmp_path):
    _, views = story_views(tmp_path)
    assert [g.name for g in views.groups()] == ["g1", "g2", "g3"]
    assert [g.name for g in views.groups(owner="alice")] == ["g1", "g2"]
    assert [g.name for g in views.groups(state="cancelled")] == ["g2"]
    assert [g.name for g in views.groups(live_only=True)] == ["g1", "g3"]


def test_pend_history_and_the_timeline_keep_every_change_with_its_time(tmp_path):
    _, views = story_views(tmp_path)
    history = views.pend_history("g1")
    assert [p.reason.cls for p in history] == ["capacity"]
    assert history[0].reason.need == "2×{gpu:8}" and history[0].reason.queue_position == 1
    assert views.group("g1").pend_reason is None  # cleared by the barrier release
    timeline = views.timeline("g1")
    assert [e.position for e in timeline] == sorted(e.position for e in timeline)
    names = [e.event for e in timeline]
    assert names[:2] == ["GroupSubmitted", "MemberCreated"]
    assert "BarrierReleased" in names and "MemberRestarted" in names
    failed = next(e for e in timeline if e.event == "MemberFailed")
    assert failed.member == "rollout"
    assert failed.detail == "error exit 137 task 0 of attempt 1 -> restart-member"
    assert failed.actor is not None and failed.actor.startswith("agent:")
    assert failed.at_ns == 75 * SECOND_NS
    assert views.timeline("g1", last=3) == timeline[-3:]


def test_cluster_holds_show_which_group_member_uses_each_node(tmp_path):
    clock = ManualClock()
    controller = new_controller(clock)
    views = Views(tmp_path / "v")
    seen = []

    def look():
        views.catch_up(controller)
        seen.append([(h.node, h.group, h.member, h.kind) for h in views.holds()])

    run_story(controller, clock, look)
    assert ("r1-n001", "g1", "trainer", "held") in seen[3]
    final = views.holds()
    assert {h.kind for h in final} == {"used"}
    assert [h.node for h in final] == sorted(h.node for h in final)
    assert ("r2-n001", "g1", "rollout") in {(h.node, h.group, h.member) for h in final}
    assert views.holds(group="g2") == []


def test_a_crash_mid_batch_keeps_neither_the_batch_nor_its_position(tmp_path):
    clock = ManualClock()
    controller = new_controller(clock)
    run_story(controller, clock)
    with Views(tmp_path / "crashed") as crashed, Views(tmp_path / "ten") as ten:
        with pytest.raises(RuntimeError):
            # the first batch (1..10) commits; the second dies at its 5th event
            crashed.catch_up(CrashingSource(controller, limit=15), batch_size=10)
        with pytest.raises(RuntimeError):
            ten.catch_up(CrashingSource(controller, limit=10), batch_size=10)
        assert crashed.position() == ten.position() == 10
        assert crashed.db.dump() == ten.db.dump()
        crashed.catch_up(controller, batch_size=10)  # a new run resumes after 10
        with Views(tmp_path / "rebuilt") as rebuilt:
            rebuilt.catch_up(controller)
            assert rebuilt.db.dump() == crashed.db.dump()


def test_catching_up_reads_only_the_log_after_the_tracked_position(tmp_path):
    clock = ManualClock()
    controller = new_controller(clock)
    run_story(controller, clock)
    total = controller.recorder.max_notification_id()
    with Views(tmp_path / "v") as views:
        views.catch_up(controller)
    with Views(tmp_path / "v") as reopened:  # a new process: the position survived
        counting = CountingSource(controller)
        assert reopened.catch_up(counting) == 0
        assert counting.afters == [total] and counting.read == 0
        clock.advance(1)
        controller.cancel("g3", actor=USER)
        assert reopened.catch_up(counting) == 2
        assert reopened.group("g3").state == "CANCELLED"


def test_histograms_measure_time_to_start_and_barrier_wait_from_event_times(tmp_path):
    _, views = story_views(tmp_path)
    hist = views.histograms()
    start = hist["time_to_start"]
    assert start.count == 1 and start.sum_ns == (1 + 2 + 5 + 1 + 1 + 3) * SECOND_NS
    wait = hist["barrier_wait"]
    assert wait.count == 1 and wait.sum_ns == 5 * SECOND_NS


def test_an_unknown_group_is_not_found(tmp_path):
    _, views = story_views(tmp_path)
    with pytest.raises(NotFound):
        views.group("nope")
    with pytest.raises(NotFound):
        views.describe("nope")


def test_a_resubmitted_name_shows_the_newest_group(tmp_path):
    clock = ManualClock()
    controller = new_controller(clock)
    run_story(controller, clock)
    controller.submit(controller.group("g2").spec)
    with Views(tmp_path / "v") as views:
        views.catch_up(controller)
        assert views.group("g2").state == "PENDING"
        assert [g.state for g in views.groups() if g.name == "g2"] == ["CANCELLED", "PENDING"]


def test_a_recorder_source_reads_a_sqlite_log_like_the_controller(tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e.db")}
    clock = ManualClock()
    controller = new_controller(clock, **env)
    run_story(controller, clock)
    source = RecorderSource.from_env(env)
    assert list(source.read_events(5)) == list(controller.read_events(5))
    assert source.recorder.max_notification_id() == controller.recorder.max_notification_id()


SCRIPT = """
import hashlib, sys, tempfile
from costart.projections import Views
from tests.hash_seed import stdout_lines
from tests.builders import ManualClock, new_controller
from tests.multi_group_story import run_story
clock = ManualClock(); controller = new_controller(clock); run_story(controller, clock)
with Views(tempfile.mkdtemp()) as views:
    views.catch_up(controller, batch_size=4)
    digest = hashlib.sha256()
    for name, rows in views.db.dump().items():
        digest.update(name.encode())
        for key, value in rows:
            digest.update(key); digest.update(value)
print(digest.hexdigest())
"""


def test_views_are_the_same_bytes_whatever_the_hash_seed():
    digests = set()
    for seed in ("0", "4242"):
        digests.add(stdout_lines(SCRIPT, seed, timeout=60)[-1])
    assert len(digests) == 1


def test_node_reports_are_a_view_of_their_own(tmp_path):
    controller, views = story_views(tmp_path, batch_size=1)
    assert views.node_status() == {"spare-n002": "down"} == controller.world.node_status
