"""The runtime history is derived state (ADR 0111, ADR 0113): a controller restored from a
snapshot and the log's tail holds the very history, and gives the very estimates, of one
that folded the whole log, wherever the snapshot was taken."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costart.controller import Controller
from costart.domain import runtime_history as rh
from costart.domain.expected_runtime import estimate_record, expected_end
from costart.domain.world import World
from costart.eventlog.restore import fold
from costart.eventlog.snapshot_schema import SNAPSHOT_SCHEMA, decode_state, encode_state
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from tests.builders import USER, ManualClock, a_group, fail, full_placement, new_controller, start
from tests.builders import succeed as succeed_job

ENDINGS = ("succeed", "preempted", "cancel", "running")
Run = tuple[str, str, int, str]
"""(owner, workload, minutes run, ending)."""

runs = st.lists(
    st.tuples(
        st.sampled_from(("alice", "bob")),
        st.sampled_from(("train", "eval", "sweep", "etl")),
        st.integers(min_value=0, max_value=600),
        st.sampled_from(("succeed", *ENDINGS)),  # success twice as likely
    ),
    max_size=24,
)


def _play(controller: Controller, clock: ManualClock, plan: list[Run]) -> None:
    """Each run in turn: submitted, placed, started, run for its minutes, then ended its
    way (a ``running`` one is left running)."""
    for number, (owner, workload, minutes, ending) in enumerate(plan):
        name = f"{workload}-{number}"
        spec = a_group(name, owner).with_member("worker").build()
        controller.submit(spec)
        controller.apply_decisions([full_placement(spec, rack=f"r{number}")])
        start(controller, f"{name}/worker")
        clock.advance(minutes * 60)
        if ending == "succeed":
            succeed_job(controller, f"{name}/worker")
        elif ending == "preempted":
            fail(controller, f"{name}/worker", "preempted")
        elif ending == "cancel":
            controller.cancel(name, actor=USER)


seen: Counter[str] = Counter()


@settings(max_examples=60, deadline=None)
@given(plan=runs, cut=st.floats(min_value=0, max_value=1))
def test_a_snapshot_taken_anywhere_then_the_rest_folded_is_the_whole_fold(
    plan: list[Run], cut: float
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rh, "MAX_KEYS", 3)  # so eviction happens in short logs
        patch.setattr(rh, "SAMPLES_PER_KEY", 4)
        clock = ManualClock()
        controller = new_controller(clock)
        _play(controller, clock, plan)
        events = list(RecorderSource(controller.recorder).read_events())
        at = int(cut * len(events))
        whole = fold(World(), iter(events))
        head = fold(World(), iter(events[:at]))
        restored = fold(decode_state(encode_state(head), SNAPSHOT_SCHEMA), iter(events[at:]))
    assert restored.runtime_history == whole.runtime_history == controller.world.runtime_history
    assert list(restored.runtime_history.keys) == list(whole.runtime_history.keys)
    assert encode_state(restored) == encode_state(whole)
    learned_keys = {(owner, workload) for owner, workload, _, end in plan if end == "succeed"}
    seen["evicted" if len(learned_keys) > 3 else "not evicted"] += 1
    seen["learned nothing" if not learned_keys else "learned"] += 1


def test_zz_paths_taken_by_the_snapshot_property() -> None:
    print(f"runtime history snapshot property: {dict(seen)}")
    if seen:  # run after the property (tests run in the order of the module)
        assert seen["evicted"] and seen["learned"] and seen["learned nothing"]


def test_a_controller_restarted_on_lmdb_estimates_as_one_that_replayed_the_whole_log(
    tmp_path: Path,
) -> None:
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(tmp_path / "store"),
        "COSTART_SNAPSHOT_EVERY": "7",
    }
    clock = ManualClock()
    first = Controller(env=env, clock=clock)
    plan: list[Run] = [
        ("alice", "train", 60, "succeed"),
        ("alice", "train", 240, "preempted"),
        ("alice", "train", 120, "succeed"),
        ("alice", "train", 180, "succeed"),
        ("bob", "train", 30, "succeed"),
        ("alice", "train", 10, "cancel"),
        ("alice", "train", 200, "running"),
    ]
    _play(first, clock, plan)
    first.close()
    second = Controller(env=env, clock=clock)
    snapshot = second.session.snapshots_store.read(second.session.snapshots_store.positions()[-1])
    assert snapshot.schema == SNAPSHOT_SCHEMA
    assert snapshot.position < second.world.position  # restored from it, then the tail
    replayed = rebuild(RecorderSource(second.recorder))
    assert second.world.runtime_history == replayed.runtime_history
    assert replayed.runtime_history.samples("alice train worker") == [
        60 * 60 * 10**9,
        120 * 60 * 10**9,
        180 * 60 * 10**9,
    ]
    running = second.world.member_named(second.group("train-6"), "worker")
    for world in (second.world, replayed):
        group = world.group_named("train-6")
        member = world.member_named(group, "worker")
        history = world.runtime_history
        assert expected_end(group, member, clock.now_ns, history) == (
            member.started_at_ns + 400 * 60 * 10**9,  # 200m, past its 3h estimate: twice
            "estimate",
        )
        assert estimate_record(group, member, clock.now_ns, history) == estimate_record(
            second.group("train-6"), running, clock.now_ns, second.world.runtime_history
        )
    second.close()
