"""The log digest reads the store's own record cursor; it equals the digest of the same
log read page by page through the library's notifications."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from costart.cli.sim_cmd import controller_factory
from costart.eventlog import event_reading
from costart.eventlog.capabilities import Capability, capabilities_of
from costart.sim.results import log_digest, run_policy
from tests.sim.helpers import setup_of


class PagesOnly:
    """A recorder seen through its notifications alone (no cursor), as on PostgreSQL."""

    def __init__(self, recorder: Any) -> None:
        self._recorder = recorder

    def select_notifications(self, *args: Any, **kwargs: Any) -> Any:
        return self._recorder.select_notifications(*args, **kwargs)


def test_the_log_digest_by_cursor_equals_the_digest_by_pages(monkeypatch):
    _, engine = run_policy(setup_of("mixed"), "reserve", controller_factory)
    recorder = engine.controller.recorder
    assert Capability.RECORD_CURSOR in capabilities_of(recorder)
    by_cursor = log_digest(engine.controller)
    monkeypatch.setattr(event_reading, "PAGE_SIZE", 97)  # several pages, the last one partial
    by_pages = log_digest(SimpleNamespace(recorder=PagesOnly(recorder)))
    assert by_cursor == by_pages
    assert by_cursor[0] == engine.controller.world.position > 97
