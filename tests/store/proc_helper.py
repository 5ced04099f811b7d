"""Child-process roles for the multi-process and crash tests.

Run as ``python proc_helper.py <role> <path> [args...]``. Roles:

* ``writer PATH PREFIX THREADS BATCHES SIZE MAP_SIZE`` -- THREADS threads each
  append BATCHES batches of SIZE events (one new originator per batch; BATCHES
  of 0 means forever). After each ``insert_events`` returns, writes one line
  ``ack <tag> <first id> <last id>`` to stdout with a single ``write(2)``, so a
  SIGKILL never leaves a torn acknowledgement. Prints ``ready`` once open.
* ``hold-reader PATH`` -- opens a read transaction, prints ``ready``, sleeps.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import structlog
from eventsourcing.persistence import StoredEvent

from costart.store import LmdbApplicationRecorder, StoreSettings, open_store

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import batch_originator


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def batch_events(tag: str, size: int) -> list[StoredEvent]:
    originator = batch_originator(tag)
    return [
        StoredEvent(originator, v, "costart.test:Crash", f"{tag}/{v}/{size}".encode())
        for v in range(1, size + 1)
    ]


def writer(path: str, prefix: str, *, threads: int, batches: int, size: int, map_size: int) -> None:
    store = open_store(StoreSettings(path=path, map_size=map_size))
    recorder = LmdbApplicationRecorder(store)
    say("ready")

    def work(thread: int) -> None:
        n = 0
        while batches == 0 or n < batches:
            tag = f"{prefix}-{thread}-{n}"
            ids = recorder.insert_events(batch_events(tag, size))
            assert ids is not None
            say(f"ack {tag} {ids[0]} {ids[-1]}")
            n += 1

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    recorder.close()
    store.release()
    say("done")


def hold_reader(path: str) -> None:
    store = open_store(StoreSettings(path=path))
    txn = store.begin()
    txn.get(b"anything")
    say("ready")
    time.sleep(60)


def main(argv: list[str]) -> None:
    # Logs to stderr: stdout carries only the protocol lines.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    role, path, *args = argv
    if role == "writer":
        prefix, threads, batches, size, map_size = args
        writer(
            path,
            prefix,
            threads=int(threads),
            batches=int(batches),
            size=int(size),
            map_size=int(map_size),
        )
    elif role == "hold-reader":
        hold_reader(path)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
