"""Benchmark of the LMDB event store (issue 3), every figure against a baseline measured in
the same run on the same machine (medians; the machine is noisy).

(a) durable single-command rate through the Controller vs raw LMDB, one record of the
    same size and one fsync per commit;
(b) group-committed durable rate, events/s, 8 threads submitting the RL post-training
    spec vs raw LMDB with 100 events per fsync;
(c) full read + decode of every event vs raw LMDB cursor + typed msgspec decode + fold;
(d) the eventsourcing library's SQLite module on the same workloads, as a peer column.

Ceilings (informative, not targets): raw LMDB, with no CPU of ours, committing exactly
what (a) and (b) commit -- (a) one record plus its originator-index entry per commit;
(b) the records of 8 in-flight RL submits (5 events each, their sizes) plus their index
entries per commit, the most 8 submitters with one command each can put in one commit.
They show how much of a gap to the plain baselines any LMDB store with an originator
index pays on this machine, before any code runs.

Run: python bench/bench_store.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import logging
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import lmdb
from common import controller_on, median_rate, write_results

from costart.domain.decisions import SetPendReason
from costart.domain.events import PendReason
from costart.domain.spec import parse_spec
from costart.eventlog.codec import MsgspecMapper, decode_any_event
from costart.eventlog.event_reading import read_events
from costart.logging_setup import configure_logging

ROOT = Path(__file__).resolve().parents[1]
RL_SPEC = (ROOT / "scenarios" / "rl-post-training.toml").read_bytes()
THREADS = 8


def lmdb_env(path: Path) -> dict[str, str]:
    return {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(path)}


def sqlite_env(path: Path) -> dict[str, str]:
    path.mkdir(parents=True, exist_ok=True)
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path / "events.db")}


def rl_spec(name: str):
    return parse_spec(RL_SPEC.replace(b'"grpo-run-42"', f'"{name}"'.encode()), "toml")


# --- (a) single commands --------------------------------------------------------------


def single_commands(env: dict[str, str], commands: int) -> tuple[float, int]:
    controller = controller_on(env)
    controller.submit(rl_spec("single"))
    reasons = [PendReason("capacity", f"reason {i % 2}") for i in range(2)]

    def run() -> int:
        for i in range(commands):
            controller.apply_decisions([SetPendReason("single", reasons[i % 2])])
        return commands

    rate = median_rate(run, 3)
    size = len(
        controller.recorder.select_notifications(
            start=controller.recorder.max_notification_id(), limit=1
        )[0].state
    )
    controller.close()
    return rate, size


def raw_single(path: Path, record_bytes: int, commands: int) -> float:
    env = lmdb.open(str(path), map_size=1 << 30, sync=True, metasync=True)
    payload = b"x" * record_bytes
    counter = [0]

    def run() -> int:
        for _ in range(commands):
            counter[0] += 1
            with env.begin(write=True) as txn:
                txn.put(counter[0].to_bytes(8, "big"), payload)
        return commands

    rate = median_rate(run, 3)
    env.close()
    return rate


def raw_single_indexed(path: Path, record_bytes: int, commands: int) -> float:
    """Ceiling of (a): one record and one index entry (same key shape) per commit."""
    env = lmdb.open(str(path), map_size=1 << 30, sync=True, metasync=True, max_dbs=2)
    records, index = env.open_db(b"records"), env.open_db(b"index")
    payload = b"x" * record_bytes
    originator = b"\x01" + bytes(range(16))  # one aggregate, like (a)'s group
    counter = [0]

    def run() -> int:
        for _ in range(commands):
            counter[0] += 1
            key = counter[0].to_bytes(8, "big")
            with env.begin(write=True) as txn:
                txn.put(key, payload, db=records, append=True)
                txn.put(originator + key, key, db=index)
        return commands

    rate = median_rate(run, 3)
    env.close()
    return rate


# --- (b) group commit -------------------------------------------------------------------


def concurrent_submits(env: dict[str, str], per_thread: int) -> float:
    controller = controller_on(env)
    # Parsing the TOML is the client's work, not the store's: done before timing.
    rounds = [
        [[rl_spec(f"r{r}-t{t}-{i}") for i in range(per_thread)] for t in range(THREADS)]
        for r in range(3)
    ]

    def run() -> int:
        specs = rounds.pop()
        before = controller.recorder.max_notification_id() or 0

        def submitter(t: int) -> None:
            for spec in specs[t]:
                controller.submit(spec)

        threads = [threading.Thread(target=submitter, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return (controller.recorder.max_notification_id() or 0) - before

    rate = median_rate(run, 3)
    controller.close()
    return rate


def raw_batches(path: Path, record_bytes: int, events: int) -> float:
    env = lmdb.open(str(path), map_size=1 << 31, sync=True, metasync=True)
    payload = b"x" * record_bytes
    counter = [0]

    def run() -> int:
        for _ in range(events // 100):
            with env.begin(write=True) as txn:
                for _ in range(100):
                    counter[0] += 1
                    txn.put(counter[0].to_bytes(8, "big"), payload)
        return events

    rate = median_rate(run, 3)
    env.close()
    return rate


def raw_submit_batches(path: Path, submit_records: list[int], events: int) -> float:
    """Ceiling of (b): commits of THREADS submits' records (``submit_records``: the record
    sizes of one submit) and their index entries, keys as random as uuid5 ids."""
    env = lmdb.open(str(path), map_size=1 << 31, sync=True, metasync=True, max_dbs=2)
    records, index = env.open_db(b"records"), env.open_db(b"index")
    payloads = [b"x" * size for size in submit_records]
    per_commit = THREADS * len(payloads)
    counter = [0]
    originators = (hashlib.sha1(str(i).encode()).digest()[:16] for i in itertools.count())

    def run() -> int:
        for _ in range(events // per_commit):
            with env.begin(write=True) as txn:
                for _ in range(THREADS):
                    for payload in payloads:
                        counter[0] += 1
                        key = counter[0].to_bytes(8, "big")
                        txn.put(key, payload, db=records, append=True)
                        txn.put(b"\x01" + next(originators) + (1).to_bytes(8, "big"), key, db=index)
        return events // per_commit * per_commit

    rate = median_rate(run, 3)
    env.close()
    return rate


def submit_record_sizes(env: dict[str, str]) -> list[int]:
    """Sizes of the records one RL submit wrote (the last submit in the log at ``env``)."""
    controller = controller_on(env)
    recorder = controller.recorder
    last = recorder.max_notification_id() or 0
    events = len(rl_spec("probe").members) + 1
    sizes = [
        len(n.state) for n in recorder.select_notifications(start=last - events + 1, limit=events)
    ]
    controller.close()
    return sizes


# --- (c) full read ----------------------------------------------------------------------


def full_read(env: dict[str, str]) -> tuple[float, list[tuple[int, bytes]]]:
    controller = controller_on(env)
    mapper = MsgspecMapper()
    events = [
        (n.id, n.state) for n in controller.recorder.select_notifications(start=1, limit=10**7)
    ]

    def run() -> int:
        latest: dict[object, object] = {}
        count = 0
        for _, event in read_events(controller.recorder, mapper):
            latest[event.originator_id] = event
            count += 1
        return count

    rate = median_rate(run, 5)
    controller.close()
    return rate, events


def raw_read(path: Path, events: list[tuple[int, bytes]]) -> float:
    env = lmdb.open(str(path), map_size=1 << 31)
    with env.begin(write=True) as txn:
        for position, state in events:
            txn.put(position.to_bytes(8, "big"), state)

    def run() -> int:
        latest: dict[object, object] = {}
        count = 0
        with env.begin() as txn:
            for _, value in txn.cursor():
                event = decode_any_event(value)
                latest[event.originator_id] = event
                count += 1
        return count

    rate = median_rate(run, 5)
    env.close()
    return rate


def main() -> None:
    configure_logging(level=logging.WARNING)
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    args = parser.parse_args()
    commands, per_thread = (50, 4) if args.quick else (300, 40)
    work = Path(tempfile.mkdtemp(prefix="costart-bench-"))
    try:
        figures: dict[str, float] = {}
        print("(a) single durable commands ...", file=sys.stderr)
        figures["a_lmdb_commands_per_s"], size = single_commands(lmdb_env(work / "a"), commands)
        figures["a_raw_commits_per_s"] = raw_single(work / "a-raw", size, commands)
        figures["a_ceiling_commits_per_s"] = raw_single_indexed(work / "a-ceil", size, commands)
        figures["a_sqlite_commands_per_s"], _ = single_commands(
            sqlite_env(work / "a-sqlite"), commands
        )
        print("(b) group commit, 8 submitters ...", file=sys.stderr)
        figures["b_lmdb_events_per_s"] = concurrent_submits(lmdb_env(work / "b"), per_thread)
        figures["b_raw_events_per_s"] = raw_batches(work / "b-raw", size, 100 * commands)
        figures["b_ceiling_events_per_s"] = raw_submit_batches(
            work / "b-ceil", submit_record_sizes(lmdb_env(work / "b")), 100 * commands
        )
        figures["b_sqlite_events_per_s"] = concurrent_submits(
            sqlite_env(work / "b-sqlite"), per_thread
        )
        print("(c) full read + decode ...", file=sys.stderr)
        figures["c_lmdb_events_per_s"], events = full_read(lmdb_env(work / "b"))
        figures["c_raw_events_per_s"] = raw_read(work / "c-raw", events)
        figures["c_sqlite_events_per_s"], _ = full_read(sqlite_env(work / "b-sqlite"))
        figures["c_events"] = len(events)
        figures["record_bytes"] = size
        ratios = {
            "a_vs_raw": figures["a_lmdb_commands_per_s"] / figures["a_raw_commits_per_s"],
            "b_vs_raw": figures["b_lmdb_events_per_s"] / figures["b_raw_events_per_s"],
            "c_vs_raw": figures["c_lmdb_events_per_s"] / figures["c_raw_events_per_s"],
            "a_vs_sqlite": figures["a_lmdb_commands_per_s"] / figures["a_sqlite_commands_per_s"],
            "b_vs_sqlite": figures["b_lmdb_events_per_s"] / figures["b_sqlite_events_per_s"],
            "c_vs_sqlite": figures["c_lmdb_events_per_s"] / figures["c_sqlite_events_per_s"],
            "a_ceiling_vs_raw": figures["a_ceiling_commits_per_s"] / figures["a_raw_commits_per_s"],
            "a_ceiling_vs_sqlite": (
                figures["a_ceiling_commits_per_s"] / figures["a_sqlite_commands_per_s"]
            ),
            "a_vs_ceiling": figures["a_lmdb_commands_per_s"] / figures["a_ceiling_commits_per_s"],
            "b_ceiling_vs_raw": figures["b_ceiling_events_per_s"] / figures["b_raw_events_per_s"],
            "b_vs_ceiling": figures["b_lmdb_events_per_s"] / figures["b_ceiling_events_per_s"],
        }
        for key in sorted(figures):
            print(f"  {key:28s} {figures[key]:>12,.0f}")
        for key, value in ratios.items():
            print(f"  {key:28s} {value:>12.2f}x")
        # The targets and their verdicts: `targets.TARGETS["store"]`, printed by write_results.
        write_results("store", {"figures": figures, "ratios": ratios})
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
