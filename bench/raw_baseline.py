"""The raw baselines replay and restore are measured against: the same bytes read and
decoded with nothing of costart's on top (no checksum, no chain, no fold into state).

- `raw_decode_fold`: every event body from a plain LMDB cursor, decoded by its tag
  (`decode_any_event`, one typed msgspec decode) and stored in a dict by aggregate: the
  least a replay that keeps anything can do.
- `raw_restore`: the snapshot's state bytes decoded untyped (`msgspec.msgpack.decode`)
  and the tail's event bodies decoded as above: the least a restore can do with the
  bytes it has to read.

This file is the yardstick: `tests/test_raw_baseline_pinned.py` pins its bytes by hash,
so a change to it (which would move every ratio measured against it) is a deliberate
one, made with the hash and said in an ADR.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import lmdb
import msgspec

from costart.eventlog.codec import decode_any_event, gc_paused

SNAPSHOT_KEY = (0).to_bytes(8, "big")  # before every event position


def key(position: int) -> bytes:
    return position.to_bytes(8, "big")


def write_raw(path: Path, events: Iterable[bytes], snapshot: bytes) -> lmdb.Environment:
    """A plain LMDB file of the event bodies (keyed by position, from 1) and one
    snapshot state (under `SNAPSHOT_KEY`)."""
    env = lmdb.open(str(path), map_size=4 << 30)
    with env.begin(write=True) as txn:
        txn.put(SNAPSHOT_KEY, snapshot)
        for position, body in enumerate(events, start=1):
            txn.put(key(position), body)
    return env


def raw_decode_fold(env: lmdb.Environment) -> dict[object, object]:
    """Every event decoded and kept as its aggregate's latest."""
    latest: dict[object, object] = {}
    # The same GC pause as our replay, so the ratio compares like with like.
    with gc_paused(), env.begin() as txn:
        cursor = txn.cursor()
        cursor.set_range(key(1))
        for value in cursor.iternext(keys=False):
            event = decode_any_event(value)
            latest[event.originator_id] = event
    return latest


def raw_restore(env: lmdb.Environment, after: int) -> tuple[object, list[object]]:
    """The snapshot's state decoded, and every event after position ``after``."""
    with gc_paused(), env.begin() as txn:
        state = msgspec.msgpack.decode(txn.get(SNAPSHOT_KEY))
        cursor = txn.cursor()
        cursor.set_range(key(after + 1))
        events = [decode_any_event(value) for value in cursor.iternext(keys=False)]
    return state, events
