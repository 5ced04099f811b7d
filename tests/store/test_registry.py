"""The process-wide store registry tolerates a recorder's finalizer running while this
thread is inside `open_store` (the garbage collector can run it at any allocation)."""

from __future__ import annotations

import threading

from costart.store import lmdbenv
from costart.store.lmdbenv import open_store
from costart.store.settings import StoreSettings


def test_a_finalizer_releasing_a_store_inside_open_store_does_not_deadlock(tmp_path):
    other = open_store(StoreSettings(path=str(tmp_path / "other")))
    original_init = lmdbenv.LmdbStore.__init__

    def init_then_release_other(self, settings, key):  # what a GC-run finalizer does
        original_init(self, settings, key)
        other.release()

    lmdbenv.LmdbStore.__init__ = init_then_release_other  # type: ignore[method-assign]
    done = threading.Event()

    def opener() -> None:
        open_store(StoreSettings(path=str(tmp_path / "new"))).release()
        done.set()

    try:
        thread = threading.Thread(target=opener, daemon=True)
        thread.start()
        assert done.wait(10), "open_store deadlocked on a re-entrant release"
    finally:
        lmdbenv.LmdbStore.__init__ = original_init  # type: ignore[method-assign]
    assert other.closed
