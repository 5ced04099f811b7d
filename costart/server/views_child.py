"""The views process's own side (`python -m costart.server.views_child`): open the log
and the views, then fold on each request of the server until told to stop.

Its own module, so that what it pickles back names importable classes: run as
``__main__``, a class defined here would be unpicklable in the server ("Can't get
attribute ... on <module '__main__'>"), hence `ViewsProcessError` lives in
`costart.server.errors`. The server's side is `costart.server.views_process`."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Final

from costart.eventlog.event_reading import RecorderSource
from costart.logging_setup import configure_logging
from costart.projections import Views
from costart.server.errors import ViewsProcessError

CATCH_UP: Final = "catch-up"
STOP: Final = "stop"


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


def _serve(requests: Connection, answers: Connection, views_dir: Path) -> None:
    """The child's loop: open the log (from the environment, as the Controller opened
    it) and the views, then fold on each request until told to stop."""
    try:
        source = RecorderSource.from_env(os.environ)
        views = Views(views_dir)
    except Exception as error:  # said in answer to every request: nothing to fold with
        failed = _portable(error)
        while requests.recv() != STOP:
            answers.send((None, failed))
        return
    try:
        while requests.recv() != STOP:
            try:
                views.catch_up(source)
                answers.send((views.position(), None))
            except Exception as error:  # the catch-up's own failure, for its readers
                answers.send((None, _portable(error)))
    finally:
        views.close()


def main(argv: list[str]) -> None:
    """``python -m costart.server.views_child REQUESTS_FD ANSWERS_FD VIEWS_DIR``."""
    requests_fd, answers_fd, views_dir = argv
    # The server stops this process (STOP, or the pipe closing when the server is
    # gone); a Ctrl-C meant for the server must not kill it mid-transaction first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    configure_logging(json=True)
    requests = Connection(int(requests_fd), writable=False)
    answers = Connection(int(answers_fd), readable=False)
    with contextlib.suppress(EOFError, BrokenPipeError):  # the server is gone
        _serve(requests, answers, Path(views_dir))


if __name__ == "__main__":
    main(sys.argv[1:])
