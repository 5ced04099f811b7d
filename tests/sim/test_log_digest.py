"""The log digest read in place from the in-memory recorder equals the digest read page
by page through the recorder's notifications."""

from __future__ import annotations

from costart.cli.sim_cmd import controller_factory
from costart.sim import results
from costart.sim.results import log_digest, run_policy
from tests.sim.helpers import setup_of


def test_the_in_memory_log_digests_as_its_pages_do(monkeypatch):
    _, engine = run_policy(setup_of("mixed"), "reserve", controller_factory)
    in_place = log_digest(engine.controller)
    monkeypatch.setattr(results, "_in_memory_log", lambda recorder: None)
    monkeypatch.setattr(results, "LOG_PAGE", 97)  # several pages, the last one partial
    paged = log_digest(engine.controller)
    assert in_place == paged
    assert in_place[0] == engine.controller.world.position > 97
