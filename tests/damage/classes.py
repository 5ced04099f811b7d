"""The damage classes of the suite: how each damages a copy of the base store, and what
every reader must then do.

Outcomes a reader may have (checked in `test_damage_suite`):

* ``ANSWER``: exit 0 with the intact store's answer (after a loud fallback or rebuild
  where something was damaged) -- required where the log is intact;
* a number: that exit code, with a clear message (never a traceback);
* ``EITHER``: the intact answer, or a non-zero exit with a clear message (damage the
  reader may not need to read, e.g. a record the views were built past);
* ``OLDER``: exit 0 with the answer of the older log it was given (a reader that has no
  record of where the log ended -- a store rolled back as a whole, views included, and
  no host position given: not detectable from the store, ADR 0048).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import lmdb

from costart.eventlog.replay_log import EVENTS_LOG, SNAPSHOTS_LOG
from costart.store.lmdbenv import index_db_name, log_db_name
from costart.store.record_layout import pack_u64
from tests.damage import damage
from tests.damage.base_store import build_views, cut_log

ANSWER: Final = "answer"
EITHER: Final = "either"
OLDER: Final = "older"
DAMAGED: Final = 7
TAIL_LOST: Final = 8
READERS: Final = ("verify", "get", "describe", "controller", "standby", "host", "serve")
"""``host``: the Controller an embedding host builds, giving back the position, hash and
term it last saw of the intact store (``bootstrap(last_known=...)``, ADR 0048)."""
OLD_END: Final = 38
"""Where the older copy of the log ends (`cut_log`): mid-run, the group RUNNING (a
restarted rollout task just started again)."""
TAIL: Final = 49
"""A position after the newest snapshot (47): a restoring reader must read it."""
LAST: Final = 51
"""The log's last position."""


def _record(store: Path, log: str, position: int) -> bytes:
    return damage.stored_value(store, log_db_name(log), pack_u64(position))


def flip_event(position: int) -> Callable[[Path], None]:
    def apply(store: Path) -> None:
        value = _record(store, EVENTS_LOG, position)
        damage.flip_in_value(store, value[:48], 40)

    return apply


def flip_newest_snapshot(store: Path) -> None:
    env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=64)
    with env.begin() as txn:
        cursor = txn.cursor(db=env.open_db(log_db_name(SNAPSHOTS_LOG), txn=txn, create=False))
        cursor.last()
        value = bytes(cursor.value())
    env.close()
    damage.flip_in_value(store, value[:200], 150)


def delete_newest_snapshot(store: Path) -> None:
    """Remove the newest snapshot the way a person would: record and index entry."""
    env = lmdb.open(str(store), max_dbs=64)
    with env.begin(write=True) as txn:
        records = env.open_db(log_db_name(SNAPSHOTS_LOG), txn=txn, create=False)
        index = env.open_db(index_db_name(SNAPSHOTS_LOG), txn=txn, create=False)
        cursor = txn.cursor(db=index)
        cursor.last()
        txn.delete(cursor.value(), db=records)
        cursor.delete()
    env.close()


def delete_event(position: int) -> Callable[[Path], None]:
    def apply(store: Path) -> None:
        env = lmdb.open(str(store), max_dbs=64)
        with env.begin(write=True) as txn:
            records = env.open_db(log_db_name(EVENTS_LOG), txn=txn, create=False)
            txn.delete(pack_u64(position), db=records)
        env.close()

    return apply


def flip_group_view(store: Path) -> None:
    views = store / "views"
    env = lmdb.open(str(views), readonly=True, lock=False, max_dbs=64)
    with env.begin() as txn:
        value = bytes(next(iter(txn.cursor(db=env.open_db(b"groups", txn=txn))))[1])
    env.close()
    damage.flip_in_value(views, value[:64], 40)


def views(change: Callable[[Path], None]) -> Callable[[Path], None]:
    return lambda store: change(store / "views")


def views_ahead(store: Path) -> None:
    """The log replaced by an older copy of itself; the views were built to its end."""
    cut_log(store, OLD_END)


def rolled_back_whole(store: Path) -> None:
    """The whole store -- log, snapshots and views -- replaced by an older, consistent
    copy of itself (a restored backup, a volume snapshot)."""
    cut_log(store, OLD_END)
    shutil.rmtree(store / "views")
    build_views(store)


@dataclass(frozen=True)
class DamageClass:
    name: str
    damage: Callable[[Path], None]
    expect: dict[str, str | int] = field(default_factory=dict)
    """Reader -> outcome; readers not named: ``EITHER``."""
    views_behind: bool = False
    """Build the views on the older copy of the log, then give back the whole log."""
    loud: dict[str, str] = field(default_factory=dict)
    """Reader -> what its warnings must say (a fallback past damage is never silent)."""


def _all(outcome: str | int, **overrides: str | int) -> dict[str, str | int]:
    return {reader: overrides.get(reader, outcome) for reader in READERS}


def _log_intact(**overrides: str | int) -> dict[str, str | int]:
    """Only a snapshot or the views damaged: everything but verify must answer."""
    return _all(ANSWER, verify=overrides.pop("verify", 1), **overrides)


VIEWS_DAMAGED: Final = {
    "get": "views are damaged",
    "describe": "views are damaged",
    "serve": "views are damaged",
}
SNAPSHOT_SKIPPED: Final = {
    "controller": "snapshot skipped",
    "standby": "snapshot skipped",
    "serve": "snapshot skipped",
}
SERVE_IN_CI: Final = frozenset(
    {"last-record", "newest-snapshot", "views-value", "log-mid-page", "views-ahead-of-the-log"}
)
"""Classes `serve` is started on in the default profile (one of each outcome: refused as
damaged, fallback past a snapshot, fallback past the views, no SIGBUS, tail lost); the
slow profile starts it on every class."""

PAST_THE_VIEWS: Final = _all(DAMAGED, verify=1, get=ANSWER, describe=ANSWER)
"""A bad event the views were built past: the views still answer; whatever must read it
to restore (the Controller, the standby, serve) stops and names it."""

CLASSES: Final = (
    # Flipped bytes.
    DamageClass("record-in-the-tail", flip_event(TAIL), PAST_THE_VIEWS),
    DamageClass("record-before-snapshots", flip_event(3), _all(ANSWER, verify=1)),
    DamageClass("last-record", flip_event(LAST), _all(DAMAGED, verify=1)),
    DamageClass("newest-snapshot", flip_newest_snapshot, _log_intact(), loud=SNAPSHOT_SKIPPED),
    DamageClass("views-value", flip_group_view, _log_intact(), loud=VIEWS_DAMAGED),
    DamageClass("log-meta-txn-id", damage.flip_newest_meta_txn, _all(DAMAGED)),
    DamageClass(
        "log-meta-txn-id-bit-3", lambda s: damage.flip_newest_meta_txn(s, 3), _all(DAMAGED)
    ),
    DamageClass("log-older-meta-magic", lambda s: damage.flip_meta_magic(s, 0), _all(DAMAGED)),
    DamageClass(
        "views-meta-txn-id", views(damage.flip_newest_meta_txn), _log_intact(), loud=VIEWS_DAMAGED
    ),
    # Truncated files.
    DamageClass("log-to-zero", lambda s: damage.truncate(s, 0), _all(DAMAGED)),
    DamageClass("log-to-meta-pages", damage.truncate_to_meta_pages, _all(DAMAGED)),
    DamageClass("log-mid-page", damage.truncate_mid_page, _all(DAMAGED)),
    DamageClass("log-deleted", lambda s: (s / "data.mdb").unlink(), _all(DAMAGED)),
    DamageClass(
        "views-to-zero", views(lambda s: damage.truncate(s, 0)), _log_intact(), loud=VIEWS_DAMAGED
    ),
    DamageClass(
        "views-mid-page", views(damage.truncate_mid_page), _log_intact(), loud=VIEWS_DAMAGED
    ),
    # Deleted records.
    DamageClass("snapshot-deleted", delete_newest_snapshot, _log_intact(verify=ANSWER)),
    DamageClass("record-deleted", delete_event(TAIL), PAST_THE_VIEWS),
    # Views ahead of and behind the log.
    DamageClass(
        "views-ahead-of-the-log",
        views_ahead,
        {
            "verify": 1,
            "get": TAIL_LOST,
            "describe": TAIL_LOST,
            "serve": TAIL_LOST,
            "controller": TAIL_LOST,  # bootstrap checks the views' anchor (ADR 0048)
            "standby": TAIL_LOST,
            "host": TAIL_LOST,
        },
    ),
    # Nothing inside the store differs from a store that stopped there: only the host's
    # last known position tells (ADR 0048); every other reader answers the older state.
    DamageClass(
        "store-rolled-back-whole",
        rolled_back_whole,
        {**_all(OLDER, verify=ANSWER), "host": TAIL_LOST},
    ),
    DamageClass("views-behind-the-log", lambda s: None, _all(ANSWER), views_behind=True),
)
