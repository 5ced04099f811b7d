"""The store lease and fencing, in one process: epochs, expiry by the wall clock
(injected), and a deposed controller that can no longer append."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from costart.controller import Controller
from costart.domain.expected_runtime import estimate_record
from costart.eventlog.lease_keeper import LeaseKeeper
from costart.eventlog.snapshots import encode_world
from costart.eventlog.standby import Standby
from costart.log_session import LogSession
from costart.log_writer import ControllerStoppedError
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from costart.store import FencedError, Lease
from costart.store.ha import open_factory
from tests.builders import USER, ManualClock, a_group, full_placement, ready, start, succeed

SECOND_NS = 10**9


class WallClock:
    """A wall clock the test moves (the lease's only notion of time)."""

    def __init__(self) -> None:
        self.now_ns = 1_000 * SECOND_NS

    def __call__(self) -> int:
        return self.now_ns


def one_member(name: str):
    return a_group(name).with_member("a").build()


def lmdb_env(path: Path) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path)}


@pytest.fixture
def env(tmp_path):
    return lmdb_env(tmp_path / "store")


@pytest.fixture
def factory(env):
    factory = open_factory(env)
    yield factory
    factory.close()


def two_leases(factory, clock):
    return (
        Lease(factory.store, "a", 2 * SECOND_NS, clock),
        Lease(factory.store, "b", 2 * SECOND_NS, clock),
    )


def test_the_first_acquire_takes_epoch_one_and_a_held_lease_is_refused(factory):
    clock = WallClock()
    a, b = two_leases(factory, clock)
    assert a.try_acquire() == 1
    assert b.try_acquire() is None and b.epoch is None
    record = b.read()
    assert record is not None
    assert (record.holder, record.epoch, record.expires_ns) == (
        "a",
        1,
        clock.now_ns + 2 * SECOND_NS,
    )


def test_an_expired_lease_is_taken_with_the_next_epoch_and_the_old_holder_cannot_renew(factory):
    clock = WallClock()
    a, b = two_leases(factory, clock)
    a.try_acquire()
    clock.now_ns += 2 * SECOND_NS
    assert b.try_acquire() == 2
    assert not a.renew() and a.epoch is None
    assert b.renew()


def test_a_lease_that_expired_untaken_is_still_renewed_by_its_holder(factory):
    clock = WallClock()
    a, _ = two_leases(factory, clock)
    a.try_acquire()
    clock.now_ns += 10 * SECOND_NS
    assert a.renew() and a.epoch == 1
    record = a.read()
    assert record is not None and record.expires_ns == clock.now_ns + 2 * SECOND_NS


def test_a_released_lease_is_taken_at_once(factory):
    clock = WallClock()
    a, b = two_leases(factory, clock)
    a.try_acquire()
    a.release()
    assert b.try_acquire() == 2


def test_a_deposed_controller_is_fenced_on_its_next_append_and_stops(env, factory):
    clock = WallClock()
    a, b = two_leases(factory, clock)
    leader = Controller(clock=ManualClock(), session=LogSession(env, epoch=a.try_acquire()))
    leader.submit(one_member("before"))
    clock.now_ns += 3 * SECOND_NS
    assert b.try_acquire() == 2
    end = leader.recorder.max_notification_id()
    with pytest.raises(ControllerStoppedError) as raised:
        leader.submit(one_member("after"))
    assert isinstance(raised.value.__cause__, FencedError)
    assert isinstance(leader.stopped, FencedError)
    assert leader.recorder.max_notification_id() == end
    with pytest.raises(ControllerStoppedError):
        leader.cancel("before", actor=USER)
    leader.close()


def test_a_controller_with_no_lease_epoch_is_not_fenced(env, factory):
    clock = WallClock()
    a, _ = two_leases(factory, clock)
    a.try_acquire()
    controller = Controller(env=env, clock=ManualClock())
    controller.submit(one_member("free"))
    assert controller.stopped is None
    controller.close()


def test_a_standby_promotes_from_its_warm_state_to_the_same_bytes_as_a_rebuild(env, factory):
    clock = WallClock()
    a, b = two_leases(factory, clock)
    leader = Controller(clock=ManualClock(), session=LogSession(env, epoch=a.try_acquire()))
    spec = a_group("g1").with_member("a", claims=("c",)).build()
    leader.submit(spec)
    standby = Standby(factory, b, poll_s=0.01)
    leader.apply_decisions([full_placement(spec)])
    ready(leader, "g1/a", "c")
    clock.now_ns += 3 * SECOND_NS
    epoch = standby.wait_for_lease()
    assert epoch == 2
    assert standby.world.position == leader.world.position
    promoted = Controller(
        clock=ManualClock(), session=LogSession(env, epoch=epoch, warm=standby.world)
    )
    promoted.submit(one_member("g2"))
    with pytest.raises(ControllerStoppedError):
        leader.cancel("g1", actor=USER)
    source = RecorderSource(promoted.recorder)
    assert encode_world(promoted.world) == encode_world(rebuild(source))
    leader.close()
    promoted.close()


def test_a_standby_stops_waiting_when_told(factory):
    clock = WallClock()
    a, b = two_leases(factory, clock)
    a.try_acquire()
    stop = threading.Event()
    stop.set()
    assert Standby(factory, b, poll_s=0.01).wait_for_lease(stop) is None


def test_the_keeper_says_once_that_the_lease_was_taken(factory):
    clock = WallClock()
    a = Lease(factory.store, "a", 30_000_000, clock)  # renews every 10 ms
    b = Lease(factory.store, "b", 30_000_000, clock)
    a.try_acquire()
    lost = threading.Event()
    reasons: list[str] = []
    keeper = LeaseKeeper(a, lambda reason: (reasons.append(reason), lost.set()))
    keeper.start()
    clock.now_ns += SECOND_NS
    b.try_acquire()
    assert lost.wait(5)
    keeper.stop()
    assert reasons == ["another process took the lease"]


def test_a_promoted_standby_estimates_runtimes_as_a_rebuild_of_the_whole_log(tmp_path):
    # The standby restores from a snapshot taken after some runs succeeded, tails the
    # rest (a third success among it), and is promoted: its runtime history (ADR 0111)
    # is the whole log's, and so are its estimates.
    env = {**lmdb_env(tmp_path / "store"), "COSTART_SNAPSHOT_EVERY": "5"}
    factory = open_factory(env)
    clock, runs = WallClock(), ManualClock()
    a, b = two_leases(factory, clock)
    leader = Controller(clock=runs, session=LogSession(env, epoch=a.try_acquire()))

    def run(name: str, hours: int | None) -> None:
        spec = a_group(name).with_member("a").build()
        leader.submit(spec)
        leader.apply_decisions([full_placement(spec, rack=name)])
        start(leader, f"{name}/a")
        if hours is not None:
            runs.advance(hours * 3600)
            succeed(leader, f"{name}/a")

    run("train-1", 2)
    run("train-2", 1)
    snapshot, stored, _ = leader.session.snapshots_store.newest_valid()
    assert snapshot is not None and stored is not None
    assert stored.runtime_history.learned >= 1  # the standby restores a learned history
    standby = Standby(factory, b, poll_s=0.01)
    assert standby.world.runtime_history.learned == 2
    run("train-3", 4)
    run("train-4", None)
    runs.advance(5 * 3600)  # train-4 has run past its 4h estimate
    clock.now_ns += 3 * SECOND_NS
    epoch = standby.wait_for_lease()
    promoted = Controller(clock=runs, session=LogSession(env, epoch=epoch, warm=standby.world))
    replayed = rebuild(RecorderSource(promoted.recorder))
    assert promoted.world.runtime_history == replayed.runtime_history
    records = []
    for world in (promoted.world, replayed):
        group = world.group_named("train-4")
        records.append(
            estimate_record(
                group, world.member_named(group, "a"), runs.now_ns, world.runtime_history
            )
        )
    assert records[0] == records[1]
    assert records[0] is not None and (records[0].runtime_ns, records[0].slipped) == (
        10 * 3600 * SECOND_NS,
        True,
    )
    leader.close()
    promoted.close()
    factory.close()
