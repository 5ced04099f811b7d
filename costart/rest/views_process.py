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
import multiprocessing
import pickle
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Final

import structlog

from costart.logging_setup import configure_logging
from costart.projections import Views
from costart.store.reading import RecorderSource

log = structlog.get_logger("costart.serve")

CATCH_UP: Final = "catch-up"
STOP: Final = "stop"
STOP_WAIT_S: Final = 10.0


class ViewsProcessError(RuntimeError):
    """The views process failed in a way its own error cannot say (it died, or its error
    cannot be handed over)."""


def _portable(error: BaseException) -> BaseException:
    """``error`` if it survives the trip between processes unchanged, else a
    `ViewsProcessError` with its type and message."""
    try:
        back = pickle.loads(pickle.dumps(error))
        if type(back) is type(error) and str(back) == str(error):
            return error
    except Exception:  # an exception type pickle cannot rebuild
        pass
    return ViewsProcessError(f"{type(error).__name__}: {error}")


def _fold_on_request(conn: Connection, env: dict[str, str], views_dir: str) -> None:
    """The child: open the log and the views, then fold on each request."""
    configure_logging(json=True)
    try:
        _serve(conn, env, views_dir)
    except EOFError:
        return  # the server is gone


def _serve(conn: Connection, env: dict[str, str], views_dir: str) -> None:
    try:
        source = RecorderSource.from_env(env)
        views = Views(Path(views_dir))
    except Exception as error:  # said in answer to every request: nothing to fold with
        failed = _portable(error)
        while conn.recv() != STOP:
            conn.send((None, failed))
        return
    try:
        while conn.recv() != STOP:
            try:
                views.catch_up(source)
                conn.send((views.position(), None))
            except Exception as error:  # the catch-up's own failure, for its readers
                conn.send((None, _portable(error)))
    finally:
        views.close()


class ViewsProcess:
    """A child process that folds the log (opened from ``env``, as the Controller opens
    it) into the views under ``views_dir``. `catch_up` is called from one thread at a
    time (the views' `LogFollower`); `close` stops the child."""

    def __init__(self, env: Mapping[str, str], views_dir: Path) -> None:
        self._env = dict(env)
        self._views_dir = str(views_dir)
        # spawn, not fork: the server has threads and open LMDB environments.
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self.starts = 0  # how many children were started (tests: a dead one is replaced)
        self._start()

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_fold_on_request,
            args=(child, self._env, self._views_dir),
            name="costart-views",
            daemon=True,
        )
        process.start()
        child.close()
        self._conn, self._process = parent, process
        self.starts += 1

    def catch_up(self) -> int:
        """Have the child fold everything the log holds now; the views' position then.
        Raises the child's error, or `ViewsProcessError` if it died meanwhile."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                code = None if self._process is None else self._process.exitcode
                log.warning("views process gone: starting another", exit_code=code)
                self._start()
            assert self._conn is not None and self._process is not None
            try:
                self._conn.send(CATCH_UP)
                position, error = self._conn.recv()
            except (EOFError, OSError):
                self._process.join(timeout=STOP_WAIT_S)
                raise ViewsProcessError(
                    f"the views process exited during a catch-up "
                    f"(exit code {self._process.exitcode})"
                ) from None
        if error is not None:
            raise error
        return int(position)

    def close(self) -> None:
        with self._lock:
            if self._process is None or self._conn is None:
                return
            with contextlib.suppress(OSError):  # already gone
                self._conn.send(STOP)
            self._process.join(timeout=STOP_WAIT_S)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
            self._conn.close()
            self._process = None
