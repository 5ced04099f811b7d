"""Tailing subscription: in-process wake-ups plus polling for other processes.

Built on the library's ``ListenNotifySubscription``, whose pull thread reads
new notifications whenever ``_has_been_notified`` is set. Commits in this
process set it directly (the store notifies listeners of a log after each
commit). Commits by other processes sharing the environment are noticed by a
poll thread that compares the log's max notification id every
``poll_interval`` seconds -- LMDB has no cross-process notification.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import ApplicationRecorder, ListenNotifySubscription

if TYPE_CHECKING:
    from collections.abc import Sequence

    from costart.store.lmdbenv import LmdbStore


class LmdbSubscription(ListenNotifySubscription[ApplicationRecorder]):
    """Tails ``recorder``, the recorder of log ``log_name`` in ``store``."""

    def __init__(
        self,
        recorder: ApplicationRecorder,
        store: LmdbStore,
        log_name: str,
        gt: int | None = None,
        topics: Sequence[str] = (),
    ) -> None:
        super().__init__(recorder=recorder, gt=gt, topics=topics)
        self._store = store
        self._log_name = log_name
        self._poll_interval = store.settings.poll_interval
        self._stopping = threading.Event()
        store.listen(self._log_name, self._has_been_notified)
        # Set after listening: anything committed before is picked up by a pull.
        self._has_been_notified.set()
        self._poll_thread = threading.Thread(target=self._poll, daemon=True)
        self._poll_thread.start()

    def stop(self) -> None:
        super().stop()
        self._stopping.set()
        self._store.unlisten(self._log_name, self._has_been_notified)

    def __exit__(self, *args: object, **kwargs: Any) -> None:
        try:
            super().__exit__(*args, **kwargs)
        finally:
            self._poll_thread.join()

    def _poll(self) -> None:
        seen = None
        try:
            while not self._stopping.wait(self._poll_interval):
                latest = self._recorder.max_notification_id()
                if latest != seen:
                    seen = latest
                    self._has_been_notified.set()
        except BaseException as e:
            if self._thread_error is None:
                self._thread_error = e
            self.stop()
