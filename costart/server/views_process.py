"""Folding the log into the views in a process of its own, off the server's interpreter
lock.

`serve` answers a command once it is durable and folds the views behind it
(`LogFollower`, ADR 0050). In a thread that fold still shared the server's interpreter
lock with the event loop and the commands: under the benchmark's load it was a quarter
of `serve`'s Python time (ADR 0055). The views are an LMDB environment that any process
may write, and the fold only reads the committed log (`view_builder.catch_up` is safe
from several processes), so on a store that other processes can open (LMDB, PostgreSQL)
a child process does the fold, on the second core.

The server keeps its `LogFollower`: its one thread calls `ViewsProcess.catch_up`, which
asks the child to fold what the log holds now and waits (without the lock) for the
position the views reached. Reads still wait for that position, so read-your-writes is
unchanged; the server's own `Views` reads what the child committed (a new read
transaction sees the latest commit of any process).

A failure in the child (damaged views, a full disk, a log it cannot open) comes back as
the error of that catch-up, so the readers waiting for it fail naming it. A child that
died is started again at the next catch-up; the catch-up it died in fails.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Final

import structlog

from costart.server.errors import ViewsProcessError
from costart.server.views_child import CATCH_UP, STOP

log = structlog.get_logger("costart.serve")

STOP_WAIT_S: Final = 10.0


class ViewsProcess:
    """A child process that folds the log (opened from ``env``, as the Controller opens
    it) into the views under ``views_dir``. `catch_up` is called from one thread at a
    time (the views' `LogFollower`); `close` stops the child.

    The child is a fresh interpreter running only `costart.server.views_child` (not a fork of the
    server, which has threads and open LMDB environments, nor multiprocessing's spawn,
    which would import the whole CLI again), so it holds far less resident (ADR 0055)."""

    def __init__(self, env: Mapping[str, str], views_dir: Path) -> None:
        self._env = dict(env)
        self._views_dir = str(views_dir)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._requests: Connection | None = None
        self._answers: Connection | None = None
        self.starts = 0  # how many children were started (tests: a dead one is replaced)
        self._start()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _start(self) -> None:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        try:
            fds = (str(requests_read), str(answers_write))
            self._process = subprocess.Popen(
                [sys.executable, "-m", "costart.server.views_child", *fds, self._views_dir],
                env=self._env,
                stdin=subprocess.DEVNULL,
                pass_fds=(requests_read, answers_write),
            )
        finally:
            os.close(requests_read)
            os.close(answers_write)
        self._requests = Connection(requests_write, readable=False)
        self._answers = Connection(answers_read, writable=False)
        self.starts += 1

    def _forget(self) -> None:
        for conn in (self._requests, self._answers):
            if conn is not None:
                conn.close()
        self._requests = self._answers = None

    def catch_up(self) -> int:
        """Have the child fold everything the log holds now; the views' position then.
        Raises the child's error, or `ViewsProcessError` if it died meanwhile."""
        with self._lock:
            if not self.alive():
                code = None if self._process is None else self._process.returncode
                log.warning("views process gone: starting another", exit_code=code)
                self._forget()
                self._start()
            assert self._requests is not None and self._answers is not None
            try:
                self._requests.send(CATCH_UP)
                position, error = self._answers.recv()
            except (EOFError, OSError):
                code = None if self._process is None else self._process.wait(STOP_WAIT_S)
                raise ViewsProcessError(
                    f"the views process exited during a catch-up (exit code {code})"
                ) from None
        if error is not None:
            raise error
        return int(position)

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
            if process is None:
                return
            with contextlib.suppress(OSError):  # already gone
                assert self._requests is not None
                self._requests.send(STOP)
            try:
                process.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            self._forget()
