"""The views as the CLI and `costart serve` open them: anchored to the log, checked, and
never quietly rebuilt (ADR 0028).

* The views' anchor (the log position and chain hash they were built to) is checked on
  every catch-up; a log that no longer reaches it raises `LogTailLostError` and nothing
  is rebuilt over that evidence -- unless the user asked with ``--rebuild-views``.
* Damaged views (a value failing its checksum, a data file that is not whole) do not
  touch the log: the answer comes from views rebuilt from the log in a scratch
  directory, with a warning naming the view and key; ``--rebuild-views`` repairs them in
  place instead.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from costart.eventlog.errors import LogTailLostError
from costart.projections import ViewDamagedError, Views
from costart.projections.view_builder import EventSource

T = TypeVar("T")
Warn = Callable[[str], None]


def _remove_views(views_dir: Path) -> None:
    for name in ("data.mdb", "lock.mdb"):
        (views_dir / name).unlink(missing_ok=True)


class CheckedViews:
    """The views of one log for one process. ``source`` gives the log (read afresh by
    each call: another process may have appended)."""

    def __init__(
        self,
        views_dir: Path,
        source: Callable[[], EventSource],
        *,
        rebuild: bool,
        warn: Warn,
    ) -> None:
        self.views_dir = views_dir
        self.source = source
        self.rebuild = rebuild
        self.warn = warn
        self._scratch: Path | None = None
        self.views = self._open()

    def _open(self) -> Views:
        try:
            return Views(self.views_dir)
        except ViewDamagedError as error:
            return self._damaged(error)

    def _damaged(self, error: ViewDamagedError) -> Views:
        """Views that answer from the log after ``error``: repaired in place when asked,
        else rebuilt in a scratch directory (the damaged files are kept as they are)."""
        if self.rebuild:
            self.warn(f"the views are damaged ({error}); rebuilding them from the log")
            _remove_views(self.views_dir)
            views = Views(self.views_dir)
            views.rebuild(self.source())
            return views
        self._scratch = Path(tempfile.mkdtemp(prefix="costart-views-"))
        self.warn(
            f"the views are damaged ({error}); answering from views rebuilt from the log "
            f"(run with --rebuild-views to repair {self.views_dir})"
        )
        views = Views(self._scratch)
        views.rebuild(self.source())
        return views

    def fresh(self, *, verify: bool = False) -> Views:
        """The views caught up with the log (their anchor checked first). ``verify``:
        also check every stored value (a server does, once, before it serves)."""
        try:
            if verify:
                self.views.db.verify()
            self.views.catch_up(self.source())
        except ViewDamagedError as error:
            self.views.close()
            self.views = self._damaged(error)
        except LogTailLostError as error:
            if not self.rebuild:
                raise
            self.warn(f"{error}; rebuilding the views from the log as asked (--rebuild-views)")
            self.views.rebuild(self.source())
        return self.views

    def answer(self, query: Callable[[Views], T]) -> T:
        """``query`` on fresh views; on damage found while answering, on views rebuilt
        from the log instead (with a warning)."""
        views = self.fresh()
        try:
            return query(views)
        except ViewDamagedError as error:
            views.close()
            self.views = self._damaged(error)
            return query(self.views)

    def close(self) -> None:
        self.views.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
