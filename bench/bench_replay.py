"""Benchmark of snapshots and replay (issue 7), against baselines measured in the same run.

- snapshot write and restore time and size for 10k groups / 100k members;
- restore (newest snapshot) + replay of a 100k-event tail: target <= 1 s;
- full replay rate (read + decode + fold into the World) vs raw LMDB cursor + typed
  msgspec decode + fold into a dict (the store benchmark's baseline): target >= 0.40x.

Run: python bench/bench_replay.py [--groups N]
"""

from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import lmdb
from common import controller_on, write_results

from costart.app import Controller
from costart.domain.decisions import PlaceGroup, SetPendReason
from costart.domain.events import Assignment, PendReason
from costart.domain.spec import spec_from_object
from costart.logs import configure_logging
from costart.replay.rebuild import rebuild, restore
from costart.store.codec import decode_any_event, gc_paused
from costart.store.reading import RecorderSource
from costart.store.snapshots import encode_world

MEMBERS = 10



def group_spec(i: int):
    members = [
        {"name": f"m{j}", "kind": "job", "tasks": 2, "shape": {"gpu": 1}, "claims": ["gpus"]}
        for j in range(MEMBERS)
    ]
    return spec_from_object({"name": f"g{i}", "owner": "bench", "members": members})


def build_log(path: Path, groups: int, tail: int) -> Controller:
    """Groups submitted and placed, a snapshot, then a tail of pend-reason events."""
    env = {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(path),
        "COSTART_LMDB_DURABILITY": "async",
        "COSTART_LMDB_MAP_SIZE": str(4 << 30),
        "COSTART_SNAPSHOT_EVERY": "0",
    }
    controller = controller_on(env)
    for i in range(groups):
        spec = group_spec(i)
        controller.submit(spec)
        assignments = {
            m.name: (Assignment(0, f"n{i}"), Assignment(1, f"n{i}")) for m in spec.members
        }
        controller.apply_decisions([PlaceGroup(spec.name, assignments)])
        if i % 1000 == 999:
            print(f"  {i + 1:,} groups", file=sys.stderr)
    reasons = [PendReason("claims", f"waiting {k}") for k in range(2)]
    batch = []
    for k in range(tail):
        batch.append(SetPendReason(f"g{k % groups}", reasons[(k // groups) % 2]))
        if len(batch) == 1000:
            controller.apply_decisions(batch)
            batch = []
    controller.apply_decisions(batch)
    return controller


def median_time(run, repeats: int = 3) -> float:
    """Median seconds until ``run`` returned its result. The result is freed after the
    clock stops: a restored controller keeps its state, and freeing a million objects
    is not part of building them (the raw baseline is timed the same way)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - started)
        del result
    return statistics.median(times)


def main() -> None:
    configure_logging(level=logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--tail", type=int, default=100_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="costart-bench-replay-"))
    try:
        print(f"building {args.groups:,} groups x {MEMBERS} members ...", file=sys.stderr)
        controller = build_log(work / "log", args.groups, 0)
        snapshot_position = controller.world.position
        write_s = median_time(lambda: controller.snapshots_store.write(controller.world), 1)
        state_bytes = len(encode_world(controller.world))
        print(f"tail of {args.tail:,} events ...", file=sys.stderr)
        reasons = [PendReason("claims", f"waiting {k}") for k in range(2)]
        for start in range(0, args.tail, 1000):
            controller.apply_decisions(
                [
                    SetPendReason(f"g{k % args.groups}", reasons[(k // args.groups) % 2])
                    for k in range(start, min(start + 1000, args.tail))
                ]
            )
        source = RecorderSource(controller.recorder)
        total_events = controller.world.position

        restore_s = median_time(lambda: restore(controller.snapshots_store, source))
        decode_s = median_time(controller.snapshots_store.newest_valid)
        full_s = median_time(lambda: rebuild(source))
        world, snapshot, _ = restore(controller.snapshots_store, source)
        assert snapshot is not None and snapshot.position == snapshot_position
        assert encode_world(world) == encode_world(controller.world)

        raw = lmdb.open(str(work / "raw"), map_size=4 << 30)
        with raw.begin(write=True) as txn:
            for position, n in enumerate(controller.recorder.iter_notifications(1), start=1):
                txn.put(position.to_bytes(8, "big"), n.state)

        def raw_fold() -> dict[object, object]:
            latest: dict[object, object] = {}
            # The same GC pause as our replay, so the ratio compares like with like.
            with gc_paused(), raw.begin() as txn:
                for _, value in txn.cursor():
                    event = decode_any_event(value)
                    latest[event.originator_id] = event
            return latest

        raw_s = median_time(raw_fold)
        raw.close()
        controller.close()
        figures = {
            "groups": args.groups,
            "members": args.groups * MEMBERS,
            "snapshot_bytes": state_bytes,
            "snapshot_write_s": write_s,
            "snapshot_decode_s": decode_s,
            "tail_events": args.tail,
            "restore_plus_tail_s": restore_s,
            "log_events": total_events,
            "full_replay_s": full_s,
            "full_replay_events_per_s": total_events / full_s,
            "raw_decode_fold_events_per_s": total_events / raw_s,
        }
        ratio = figures["full_replay_events_per_s"] / figures["raw_decode_fold_events_per_s"]
        for key, value in figures.items():
            print(
                f"  {key:30s} {value:>14,.3f}"
                if isinstance(value, float)
                else f"  {key:30s} {value:>14,}"
            )
        print(
            f"  restore + {args.tail:,}-event tail: {restore_s:.2f} s (target <= 1 s: {'met' if restore_s <= 1 else 'NOT met'})"
        )
        print(
            f"  full replay vs raw decode+fold: {ratio:.2f}x (target >= 0.40x: {'met' if ratio >= 0.4 else 'NOT met'})"
        )
        write_results("replay", {"figures": figures, "replay_vs_raw": ratio})
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
