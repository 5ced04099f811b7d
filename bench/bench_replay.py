"""Benchmark of snapshots and replay (issues 7 and 33), against baselines measured in the
same run (`raw_baseline`, pinned by hash).

- snapshot write and restore time and size for 10k groups / 100k members;
- restore (newest snapshot) + replay of a 100k-event tail, against the raw read and
  decode of the same bytes (`raw_baseline.raw_restore`): target <= 2x. The tail is
  groups living their lives (claims READY, barrier, starts, successes, failures with their
  teardown), the event kinds a simulator run writes, not one kind repeated; its mix is
  recorded with the figures;
- full replay rate (read + check + decode + fold into the World) vs raw LMDB cursor +
  typed msgspec decode + fold into a dict (`raw_baseline.raw_decode_fold`): target >= 0.6x;
- the heap of a bare Controller restored over the log, per member (tracemalloc), with
  the log's mapped pages it keeps resident reported apart: target <= 1,000 bytes;
- instructions executed (cachegrind) for the same four runs on a smaller log
  (``--instructions-groups``), the steadier evidence on a shared machine.

Run: python bench/bench_replay.py [--groups N] [--tail N] [--instructions-groups N]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from common import controller_on, write_results
from raw_baseline import raw_decode_fold, raw_restore, write_raw

from costart.controller import Controller
from costart.domain.actors import Actor
from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment, DomainEvent
from costart.domain.spec import spec_from_object
from costart.eventlog.codec import event_decoder, gc_paused
from costart.eventlog.event_reading import RecorderSource
from costart.eventlog.restore import fold, restore
from costart.eventlog.snapshot_schema import encode_state
from costart.eventlog.snapshots import SNAPSHOT_STREAM_ID, encode_world
from costart.logging_setup import configure_logging
from costart.replay.rebuild import copy_world, rebuild
from costart.store import record_scan

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
    controller = controller_on(log_env(path))
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


def paired_medians(run, baseline, repeats: int = 5) -> tuple[float, float]:
    """Median seconds of ``run`` and of ``baseline``, timed in turns (run, baseline, run,
    ...) so that both see the same load on a shared machine: their ratio is the figure."""
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(median_time(run, 1))
        theirs.append(median_time(baseline, 1))
    return statistics.median(ours), statistics.median(theirs)


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


def log_env(path: Path) -> dict[str, str]:
    return {
        "PERSISTENCE_MODULE": "costart.store",
        "COSTART_LMDB_PATH": str(path),
        "COSTART_LMDB_DURABILITY": "async",
        "COSTART_LMDB_MAP_SIZE": str(4 << 30),
        "COSTART_SNAPSHOT_EVERY": "0",
    }


def mapped_log_bytes() -> int:
    """Resident bytes of this process's mappings of LMDB data files (the log's pages)."""
    total = 0
    in_log = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and len(fields) >= 5 and "-" in fields[0] and fields[0][0] in "0123456789abcdef":
            in_log = fields[-1].endswith("data.mdb")
        elif in_log and fields and fields[0] == "Rss:":
            total += int(fields[1]) * 1024
    return total


def controller_heap(path: Path, members: int) -> dict[str, float]:
    """A bare Controller restored over the log at ``path`` (no placement step): its heap
    per member (tracemalloc, everything the restore allocated and kept) and the log's
    pages it keeps mapped."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    controller = controller_on(log_env(path))
    gc.collect()
    heap = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    mapped = mapped_log_bytes()
    assert len(controller.world.members) == members
    controller.close()
    return {
        "heap_bytes": heap,
        "heap_bytes_per_member": heap / members,
        "mapped_log_bytes": mapped,
    }


def main() -> None:
    configure_logging(level=logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--tail", type=int, default=100_000)
    parser.add_argument("--instructions-groups", type=int, default=300)
    args = parser.parse_args()
    if not record_scan.COMPILED:
        # The store would read through the plain scan: a figure of the fallback, not of
        # the package as installed (ADR 0155).
        sys.exit("costart.store._chunkcheck is not built: run `pip install -e .` first")
    work = Path(tempfile.mkdtemp(prefix="costart-bench-replay-"))
    try:
        print(f"building {args.groups:,} groups x {MEMBERS} members ...", file=sys.stderr)
        controller = build_log(work / "log", args.groups)
        snapshot_position = controller.world.position
        write_s = median_time(lambda: controller.session.snapshots_store.write(controller.world), 1)
        state_bytes = len(encode_state(controller.world))
        print(f"tail of {args.tail:,} events ...", file=sys.stderr)
        tail_mix = lifecycle_tail(controller, args.groups, args.tail)
        source = RecorderSource(controller.recorder)
        total_events = controller.world.position
        controller_tail = total_events - snapshot_position
        snapshot, _, _ = controller.session.snapshots_store.newest_valid()
        assert snapshot is not None and snapshot.position == snapshot_position
        raw = write_raw(
            work / "raw",
            (n.state for n in controller.recorder.iter_notifications(1)),
            snapshot.state,
        )

        load_before = round(os.getloadavg()[0], 2)
        restore_s, raw_restore_s = paired_medians(
            lambda: restore(controller.session.snapshots_store, source),
            lambda: raw_restore(raw, snapshot_position),
        )
        decode_s = median_time(controller.session.snapshots_store.newest_valid)
        breakdown = restore_breakdown(controller, snapshot_position)
        full_s, raw_s = paired_medians(lambda: rebuild(source), lambda: raw_decode_fold(raw))
        world, restored_from, _ = restore(controller.session.snapshots_store, source)
        assert restored_from is not None and restored_from.position == snapshot_position
        assert encode_world(world) == encode_world(controller.world)
        del world
        raw.close()
        controller.close()
        heap = controller_heap(work / "log", args.groups * MEMBERS)
        print(f"instructions on {args.instructions_groups:,} groups ...", file=sys.stderr)
        counts = instruction_counts(work / "small", args.instructions_groups)
        figures = {
            "groups": args.groups,
            "members": args.groups * MEMBERS,
            "snapshot_bytes": state_bytes,
            "snapshot_write_s": write_s,
            "snapshot_decode_s": decode_s,
            "tail_events": controller_tail,
            "tail_mix": tail_mix,
            "restore_plus_tail_s": restore_s,
            "raw_restore_plus_tail_s": raw_restore_s,
            "restore_breakdown_s": breakdown,
            "load_average_1m_at_start": load_before,
            "log_events": total_events,
            "full_replay_s": full_s,
            "full_replay_events_per_s": total_events / full_s,
            "raw_decode_fold_events_per_s": total_events / raw_s,
            "controller_heap": heap,
            "instructions": counts,
            "compiled_record_check": record_scan.COMPILED,
        }
        ratio = figures["full_replay_events_per_s"] / figures["raw_decode_fold_events_per_s"]
        restore_ratio = restore_s / raw_restore_s
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
        print(f"  restore + {controller_tail:,}-event tail vs raw: {restore_ratio:.2f}x")
        print(f"  full replay vs raw decode+fold: {ratio:.2f}x")
        write_results(
            "replay",
            {
                "figures": figures,
                "replay_vs_raw": ratio,
                "restore_vs_raw": restore_ratio,
                "instructions_replay_vs_raw": counts["replay_vs_raw"],
                "instructions_restore_vs_raw": counts["restore_vs_raw"],
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


# Run under valgrind with bench/ on the path. argv: the log, the raw copy, the snapshot's
# position, the run ("replay", "raw", "restore", "raw_restore"), and "1" (do it) or "0"
# (setup only: imports, both stores opened).
INSTRUCTIONS_DRIVER = """
import sys
from pathlib import Path
import lmdb
from raw_baseline import raw_decode_fold, raw_restore
from costart.eventlog.restore import restore
from costart.replay.rebuild import rebuild
from costart.store.record_scan import COMPILED
from costart.store.replay_log import open_log
if not COMPILED:
    sys.exit("costart.store._chunkcheck is not built in the counted tree")
log, raw_path, after, run, go = sys.argv[1:]
raw = lmdb.open(raw_path, readonly=True, lock=False)
with open_log(Path(log)) as opened:
    if go == "1":
        if run == "replay":
            rebuild(opened.source)
        elif run == "restore":
            restore(opened.snapshots, opened.source)
        elif run == "raw":
            raw_decode_fold(raw)
        else:
            raw_restore(raw, int(after))
"""


def instructions(driver: str, args: list[str]) -> int:
    """Instructions valgrind counts for the Python ``driver`` run with ``args`` over this
    tree's code, as every counted benchmark counts them (`ab_instructions`)."""
    from ab_instructions import count_instructions

    return count_instructions(
        Path(__file__).resolve().parent.parent, driver, args, bench_on_path=True
    )


def instruction_counts(work: Path, groups: int) -> dict[str, float]:
    """Instructions of replay, restore and their raw baselines on a log of ``groups``
    groups and a tail of the same share as the wall-time run's, each the run less its
    setup alone."""
    controller = build_log(work / "log", groups)
    at = controller.world.position
    controller.session.snapshots_store.write(controller.world)
    lifecycle_tail(controller, groups, groups * 10)
    snapshot, _, _ = controller.session.snapshots_store.newest_valid()
    assert snapshot is not None
    write_raw(
        work / "raw", (n.state for n in controller.recorder.iter_notifications(1)), snapshot.state
    ).close()
    controller.close()
    base = [str(work / "log"), str(work / "raw"), str(at)]
    counts: dict[str, float] = {}
    for run in ("replay", "raw", "restore", "raw_restore"):
        counts[run] = instructions(INSTRUCTIONS_DRIVER, [*base, run, "1"]) - instructions(
            INSTRUCTIONS_DRIVER, [*base, run, "0"]
        )
    counts["replay_vs_raw"] = counts["raw"] / counts["replay"]
    counts["restore_vs_raw"] = counts["restore"] / counts["raw_restore"]
    counts["groups"] = groups
    return counts


if __name__ == "__main__":
    main()
