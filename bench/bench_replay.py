"""Benchmark of snapshots and replay (issue 7), against baselines measured in the same run.

- snapshot write and restore time and size for 10k groups / 100k members;
- restore (newest snapshot) + replay of a 100k-event tail: target <= 1 s. The tail is
  groups living their lives (claims READY, barrier, starts, successes, failures with their
  teardown), the event kinds a simulator run writes, not one kind repeated; its mix is
  recorded with the figures;
- full replay rate (read + decode + fold into the World) vs raw LMDB cursor + typed
  msgspec decode + fold into a dict (the store benchmark's baseline): target >= 0.40x.

Run: python bench/bench_replay.py [--groups N]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import lmdb
from common import controller_on, write_results

from costart.controller import Controller
from costart.domain.actors import Actor
from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment, DomainEvent
from costart.domain.spec import spec_from_object
from costart.eventlog.codec import decode_any_event, event_decoder, gc_paused
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.restore import fold, restore
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, encode_world
from costart.logging_setup import configure_logging
from costart.replay.rebuild import copy_world, rebuild

MEMBERS = 10
TASKS = 2  # per member


HOST = Actor.host("bench")  # the reports' sender


def group_spec(i: int):
    members = [
        {"name": f"m{j}", "kind": "job", "tasks": TASKS, "shape": {"gpu": 1}, "claims": ["gpus"]}
        for j in range(MEMBERS)
    ]
    return spec_from_object({"name": f"g{i}", "owner": "bench", "members": members})


def build_log(path: Path, groups: int) -> Controller:
    """Groups submitted and placed, each member waiting on its claim."""
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
    return controller


def lifecycle_tail(controller: Controller, groups: int, tail: int) -> dict[str, int]:
    """Append about ``tail`` events of placed groups living their lives: every claim
    READY (the barrier releases), every member started, then three groups in four
    succeed member by member and the fourth fails (a member's error fails the group and
    stops the rest). Returns the tail's count of each event kind."""
    first = controller.world.position
    for index in range(groups):
        if controller.world.position - first >= tail:
            break
        name = f"g{index}"
        members = {m.name: m for m in controller.members(name)}
        for j in range(MEMBERS):
            attempt = members[f"m{j}"].attempt
            controller.claim_ready(f"{name}/m{j}", "gpus", attempt, actor=HOST)
        for j in range(MEMBERS):
            for task in range(TASKS):
                controller.task_started(f"{name}/m{j}", task, members[f"m{j}"].attempt, actor=HOST)
        if index % 4 == 3:
            controller.task_failed(
                f"{name}/m0", 0, members["m0"].attempt, "error", exit_code=1, actor=HOST
            )
        else:
            for j in range(MEMBERS):
                for task in range(TASKS):
                    attempt = members[f"m{j}"].attempt
                    controller.task_succeeded(f"{name}/m{j}", task, attempt, actor=HOST)
    mix = Counter(type(event).__name__ for _, event in controller.read_events(first))
    return dict(sorted(mix.items()))


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


def restore_breakdown(controller: Controller, snapshot_position: int) -> dict[str, float]:
    """Where restore's time goes, each part timed alone (medians): reading and checking
    the newest snapshot record, decoding its state, reading and checking the tail's
    records (checksum, gap, chain), decoding the tail's events, and folding them."""
    store = controller.session.snapshots_store
    recorder = controller.recorder
    snapshot_record = median_time(
        lambda: store.recorder.select_events(SNAPSHOT_STREAM_ID, desc=True, limit=1)
    )
    snapshot, _, _ = store.newest_valid()
    assert snapshot is not None
    state_decode = median_time(lambda: snapshot.world(check=False))
    records = list(recorder.iter_records(snapshot_position + 1))
    tail_records = median_time(lambda: list(recorder.iter_records(snapshot_position + 1)))
    decoders = {r.topic: event_decoder(r.topic) for r in records}

    def decode_tail() -> list[DomainEvent]:
        with gc_paused():
            return [decoders[r.topic].decode(r.state) for r in records]

    tail_decode = median_time(decode_tail)
    events = decode_tail()
    world = snapshot.world(check=False)

    def fold_tail() -> float:
        """Seconds to fold the tail into a fresh copy of the snapshot's state (the copy
        is made before the clock starts)."""
        copy = copy_world(world)
        started = time.perf_counter()
        fold(copy, iter(enumerate(events, snapshot_position + 1)))
        return time.perf_counter() - started

    tail_fold = statistics.median(fold_tail() for _ in range(3))
    return {
        "snapshot_record_read_and_check": snapshot_record,
        "snapshot_state_decode": state_decode,
        "tail_records_read_and_check": tail_records,
        "tail_events_decode": tail_decode,
        "tail_fold": tail_fold,
    }


def main() -> None:
    configure_logging(level=logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--tail", type=int, default=100_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="costart-bench-replay-"))
    try:
        print(f"building {args.groups:,} groups x {MEMBERS} members ...", file=sys.stderr)
        controller = build_log(work / "log", args.groups)
        snapshot_position = controller.world.position
        write_s = median_time(lambda: controller.session.snapshots_store.write(controller.world), 1)
        state_bytes = len(encode_world(controller.world))
        print(f"tail of {args.tail:,} events ...", file=sys.stderr)
        tail_mix = lifecycle_tail(controller, args.groups, args.tail)
        source = RecorderSource(controller.recorder)
        total_events = controller.world.position
        controller_tail = total_events - snapshot_position

        load_before = round(os.getloadavg()[0], 2)
        restore_s = median_time(lambda: restore(controller.session.snapshots_store, source))
        decode_s = median_time(controller.session.snapshots_store.newest_valid)
        breakdown = restore_breakdown(controller, snapshot_position)
        full_s = median_time(lambda: rebuild(source))
        world, snapshot, _ = restore(controller.session.snapshots_store, source)
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
            "tail_events": controller_tail,
            "tail_mix": tail_mix,
            "restore_plus_tail_s": restore_s,
            "restore_breakdown_s": breakdown,
            "load_average_1m_at_start": load_before,
            "log_events": total_events,
            "full_replay_s": full_s,
            "full_replay_events_per_s": total_events / full_s,
            "raw_decode_fold_events_per_s": total_events / raw_s,
        }
        ratio = figures["full_replay_events_per_s"] / figures["raw_decode_fold_events_per_s"]
        for key, value in figures.items():
            if isinstance(value, dict):
                print(
                    f"  {key}: "
                    + ", ".join(
                        f"{k} {v:,.3g}" if isinstance(v, float) else f"{k} {v:,}"
                        for k, v in value.items()
                    )
                )
            elif isinstance(value, float):
                print(f"  {key:30s} {value:>14,.3f}")
            else:
                print(f"  {key:30s} {value:>14,}")
        print(
            f"  restore + {controller_tail:,}-event tail: {restore_s:.2f} s (target <= 1 s: {'met' if restore_s <= 1 else 'NOT met'})"
        )
        print(
            f"  full replay vs raw decode+fold: {ratio:.2f}x (target >= 0.40x: {'met' if ratio >= 0.4 else 'NOT met'})"
        )
        write_results("replay", {"figures": figures, "replay_vs_raw": ratio})
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
