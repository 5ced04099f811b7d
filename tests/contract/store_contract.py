"""The store contract the Controller relies on, as a reusable test case like the
eventsourcing library's recorder test cases: every backend gets a
``TestX(StoreContract)`` subclass (tests/contract/test_store_contract.py) that
implements `create_store` and inherits every case below.

What every backend keeps: a restart gives the same state byte for byte, snapshots equal
the replay to their position, a corrupt snapshot is skipped, `replay verify` passes on
a clean log and names a forged snapshot's field, and log positions have no holes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import msgspec
import pytest
from eventsourcing.persistence import StoredEvent
from rich.console import Console

from costart.cli.walkthrough import run_demo
from costart.controller import Controller
from costart.eventlog.codec import canonical_encode
from costart.eventlog.restore import restore
from costart.eventlog.snapshot_schema import encode_state
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, SNAPSHOT_TOPIC, Snapshot, encode_world
from costart.replay.rebuild import rebuild
from costart.replay.rebuild_check import verify

from .stores import Store

ROOT = Path(__file__).resolve().parents[2]


class StoreContract:
    """Inherit as ``TestSomething(StoreContract)`` and implement `create_store`."""

    def create_store(
        self, request: pytest.FixtureRequest, tmp_path: Path
    ) -> AbstractContextManager[Store]:
        """A new, empty store of the backend under test (``request`` gives fixtures
        such as ``pg_url``; ``tmp_path`` is the test's own directory)."""
        raise NotImplementedError

    @pytest.fixture
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
        with self.create_store(request, tmp_path) as store:
            yield store

    @pytest.fixture
    def demo(self, store: Store, tmp_path: Path) -> Controller:
        console = Console(file=(tmp_path / "out.txt").open("w"))
        env = {**store.env, "COSTART_SNAPSHOT_EVERY": "7"}
        return run_demo(ROOT / "scenarios" / "rl-post-training.toml", console, env=env)

    def test_a_controller_restarted_on_the_store_has_the_same_state_byte_for_byte(
        self, store: Store, demo: Controller
    ) -> None:
        restarted = store.restarted(demo)
        try:
            assert restarted.world.position == demo.world.position > 0
            assert encode_world(restarted.world) == encode_world(demo.world)
        finally:
            restarted.close()

    def test_every_snapshot_equals_the_replay_to_its_position_byte_for_byte(
        self, store: Store, demo: Controller
    ) -> None:
        source, snapshots = store.source(demo), store.snapshots(demo)
        found = snapshots.all()
        assert len(found) >= 3
        positions = [s.position for s in found if isinstance(s, Snapshot)]
        assert all(later - earlier >= 7 for earlier, later in itertools.pairwise(positions))
        for snapshot in found:
            assert isinstance(snapshot, Snapshot)
            assert encode_state(rebuild(source, until=snapshot.position)) == snapshot.state

    def test_a_corrupt_newest_snapshot_is_skipped_for_an_older_one_and_named(
        self, store: Store, demo: Controller
    ) -> None:
        snapshots = store.snapshots(demo)
        older = snapshots.positions()[-1]
        newest = demo.world.position + 1
        bad = Snapshot(newest, b"\x00" * 32, b"not a state")
        snapshots.recorder.insert_events(
            [StoredEvent(SNAPSHOT_STREAM_ID, newest, SNAPSHOT_TOPIC, canonical_encode(bad))]
        )
        world, snapshot, skipped = restore(snapshots, store.source(demo))
        assert snapshot is not None and snapshot.position == older
        assert [error.position for error in skipped] == [newest]
        assert encode_world(world) == encode_world(demo.world)

    def test_replay_verify_passes_on_a_clean_log(self, store: Store, demo: Controller) -> None:
        report = verify(store.source(demo), store.snapshots(demo))
        assert report.ok, report.divergence
        assert report.events == demo.world.position
        assert report.snapshots_checked >= 3

    def test_replay_verify_names_the_field_of_a_snapshot_that_disagrees_with_the_log(
        self, store: Store, demo: Controller
    ) -> None:
        source, snapshots = store.source(demo), store.snapshots(demo)
        taken = set(snapshots.positions())
        at = next(p for p in range(demo.world.position, 0, -1) if p not in taken)
        world = rebuild(source, until=at)
        group = world.group_named("grpo-run-42")
        world.groups[str(group.id)] = msgspec.structs.replace(group, attempt=7)
        snapshots.write(world)
        report = verify(source, snapshots)
        assert report.divergence is not None
        divergence = report.divergence
        assert (divergence.position, divergence.aggregate, divergence.field) == (
            at,
            "group grpo-run-42",
            "attempt",
        )

    def test_log_positions_run_from_one_without_holes(self, store: Store, demo: Controller) -> None:
        positions = [position for position, _ in store.source(demo).read_events()]
        assert positions == list(range(1, demo.world.position + 1))
