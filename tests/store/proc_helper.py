"""Child-process roles for the multi-process and crash tests.

Run as ``python proc_helper.py <role> <path> [args...]``. Roles:

* ``writer PATH PREFIX THREADS BATCHES SIZE MAP_SIZE`` -- THREADS threads each
  append BATCHES batches of SIZE events (one new originator per batch; BATCHES
  of 0 means forever). After each ``insert_events`` returns, writes one line
  ``ack <tag> <first id> <last id>`` to stdout with a single ``write(2)``, so a
  SIGKILL never leaves a torn acknowledgement. Prints ``ready`` once open.
* ``hold-reader PATH`` -- opens a read transaction, prints ``ready``, sleeps.
* ``zygote FD`` -- forks writers on request over the Unix socket FD (see `zygote`), so
  a crash test that starts a writer per kill pays the interpreter's start-up and these
  imports once, not once per kill.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback

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


def zygote(fd: int) -> None:
    """Serve requests on the Unix socket ``fd`` until it closes. A request is the text
    ``writer PATH PREFIX THREADS BATCHES SIZE MAP_SIZE`` with one file descriptor attached
    (the writer's stdout, usually a pipe's write end): a child is forked, runs `writer`
    with that as its stdout, and the answer is ``pid N``. ``wait N`` reaps child N and
    answers ``exit N CODE``, CODE as `subprocess` reports it (negative: killed by that
    signal). The zygote never opens a store: an LMDB environment must not cross a fork,
    so each child opens its own after it."""
    requests = socket.socket(fileno=fd)
    while True:
        text, fds, _, _ = socket.recv_fds(requests, 4096, 1)
        if not text:
            return
        command, *args = text.decode().split()
        if command == "writer":
            (stdout,) = fds
            pid = os.fork()
            if pid == 0:
                requests.close()
                os.dup2(stdout, 1)
                os.close(stdout)
                _run_forked_writer(args)
            os.close(stdout)
            requests.sendall(f"pid {pid}".encode())
        elif command == "wait":
            _, status = os.waitpid(int(args[0]), 0)
            requests.sendall(f"exit {args[0]} {os.waitstatus_to_exitcode(status)}".encode())
        else:
            raise SystemExit(f"unknown zygote request {text!r}")


def _writer_from(path: str, args: list[str]) -> None:
    """`writer` with its command-line arguments: prefix, threads, batches, size, map size."""
    prefix, threads, batches, size, map_size = args
    writer(
        path,
        prefix,
        threads=int(threads),
        batches=int(batches),
        size=int(size),
        map_size=int(map_size),
    )


def _run_forked_writer(args: list[str]) -> None:
    """A forked child's whole life: it must end in ``os._exit`` (never return into the
    zygote's loop, never run the zygote's exit handlers)."""
    try:
        path, *writer_args = args
        _writer_from(path, writer_args)
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def main(argv: list[str]) -> None:
    # Logs to stderr: stdout carries only the protocol lines.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    role, path, *args = argv
    if role == "writer":
        _writer_from(path, args)
    elif role == "hold-reader":
        hold_reader(path)
    elif role == "zygote":
        zygote(int(path))
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
