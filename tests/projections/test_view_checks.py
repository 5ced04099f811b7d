"""The views never give a wrong row: every value is checksummed, the views are anchored to
the log position and chain hash they were built to, and a log that lost its tail is
refused instead of quietly rebuilt over."""

from __future__ import annotations

from pathlib import Path

import lmdb
import pytest

from costart.domain.errors import NotFound
from costart.eventlog.errors import LogTailLostError
from costart.projections import RecorderSource, ViewDamagedError, Views
from costart.projections.view_store import seal
from tests.builders import ManualClock, new_controller
from tests.damage.base_store import cut_log
from tests.multi_group_story import run_story


def lmdb_env(path: Path) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path)}


@pytest.fixture
def story(tmp_path: Path) -> tuple[Path, Path]:
    """A multi-group story's log on LMDB (closed), and views built to its end."""
    store = tmp_path / "store"
    clock = ManualClock()
    controller = new_controller(clock, **lmdb_env(store))
    run_story(controller, clock)
    with Views(tmp_path / "views") as views:
        views.catch_up(controller)
    controller.close()
    return store, tmp_path / "views"


def raw_views(views_dir: Path) -> lmdb.Environment:
    return lmdb.open(str(views_dir), max_dbs=32)


def first_key(env: lmdb.Environment, db: bytes) -> tuple[bytes, bytes]:
    with env.begin() as txn:
        key, value = next(iter(txn.cursor(db=env.open_db(db, txn=txn))))
    return bytes(key), bytes(value)


def put_raw(env: lmdb.Environment, db: bytes, key: bytes, value: bytes) -> None:
    with env.begin(write=True) as txn:
        txn.put(key, value, db=env.open_db(db, txn=txn))


def test_a_flipped_byte_in_a_view_value_names_the_view_and_key(story):
    _, views_dir = story
    env = raw_views(views_dir)
    key, value = first_key(env, b"groups")
    damaged = bytearray(value)
    damaged[10] ^= 0x01
    put_raw(env, b"groups", key, bytes(damaged))
    env.close()
    with Views(views_dir) as views, pytest.raises(ViewDamagedError) as error:
        views.groups()
    assert error.value.view == "groups" and error.value.key == key
    assert "checksum mismatch" in str(error.value)


def test_a_value_moved_under_another_key_is_damage(story):
    """The checksum covers the key: a damaged key cannot pass a row off as another's."""
    _, views_dir = story
    env = raw_views(views_dir)
    key, value = first_key(env, b"names")
    with env.begin(write=True) as txn:
        names = env.open_db(b"names", txn=txn)
        txn.delete(key, db=names)
        txn.put(key + b"x", value, db=names)
    env.close()
    with Views(views_dir) as views, pytest.raises(ViewDamagedError, match="names"):
        views.group(key.decode())  # not "no such group": the names view is damaged


def test_a_group_listed_in_order_but_missing_its_row_is_damage_not_an_empty_answer(story):
    _, views_dir = story
    env = raw_views(views_dir)
    key, _ = first_key(env, b"groups")
    with env.begin(write=True) as txn:
        txn.delete(key, db=env.open_db(b"groups", txn=txn))
    env.close()
    with Views(views_dir) as views, pytest.raises(ViewDamagedError, match="missing"):
        views.groups()


def test_a_name_that_is_really_absent_is_not_found(story):
    _, views_dir = story
    with Views(views_dir) as views, pytest.raises(NotFound):
        views.group("no-such-group")


def test_views_ahead_of_a_log_that_lost_its_tail_are_refused_and_left_as_they_are(story):
    store, views_dir = story
    with Views(views_dir) as views:
        built_to = views.position()
        before = views.db.dump()
    cut_log(store, built_to - 5)
    source = RecorderSource.from_env(lmdb_env(store))
    with Views(views_dir) as views:
        with pytest.raises(LogTailLostError) as error:
            views.catch_up(source)
        assert views.db.dump() == before  # the evidence is kept
    assert str(error.value).startswith(
        f"log ends at {built_to - 5}, the views were built to {built_to} (hash "
    )
    assert str(error.value).endswith("the log lost its tail")


def test_views_of_another_history_as_long_are_refused(story, tmp_path):
    """Same position, other chain hash: the log was replaced, not extended."""
    _, views_dir = story
    other = tmp_path / "other"
    clock = ManualClock()
    clock.advance(7)  # other times: other events, other hashes
    controller = new_controller(clock, **lmdb_env(other))
    run_story(controller, clock)
    controller.close()
    with Views(views_dir) as views, pytest.raises(LogTailLostError, match="replaced"):
        views.catch_up(RecorderSource.from_env(lmdb_env(other)))


def test_views_behind_the_log_catch_up(story, tmp_path):
    store, _ = story
    source = RecorderSource.from_env(lmdb_env(store))
    with Views(tmp_path / "fresh") as views:
        assert views.catch_up(source) == source.recorder.max_notification_id()
        assert views.position() == source.recorder.max_notification_id()


def test_views_of_the_first_layout_are_emptied_and_rebuilt(story, tmp_path):
    store, _ = story
    old = tmp_path / "old-views"
    env = lmdb.open(str(old), max_dbs=32)
    put_raw(env, b"meta", b"position", b"\x05")  # the first layout: a bare position
    put_raw(env, b"groups", b"g", b"not sealed")
    env.close()
    source = RecorderSource.from_env(lmdb_env(store))
    with Views(old) as views:
        assert views.position() == 0
        views.catch_up(source)
        assert views.position() == source.recorder.max_notification_id()


def test_a_damaged_layout_stamp_is_damage(story):
    _, views_dir = story
    env = raw_views(views_dir)
    put_raw(env, b"meta", b"format", seal("meta", b"format", b"\x07"))
    env.close()
    with pytest.raises(ViewDamagedError, match="layout 7"):
        Views(views_dir)


def test_read_only_views_write_nothing(story):
    _, views_dir = story
    (views_dir / "lock.mdb").unlink()
    before = (views_dir / "data.mdb").read_bytes()
    with Views(views_dir, readonly=True) as views:
        assert views.groups()
    assert (views_dir / "data.mdb").read_bytes() == before
    assert not (views_dir / "lock.mdb").exists()
