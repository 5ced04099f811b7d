"""The Service without HTTP (ADR 0054): it runs with no change feed at all (as the CLI
may), keeps a plugged-in feed up with the log, makes reads wait for what the feed has
sent, and runs a plugged-in session driver after every session."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from costart.controller import Controller
from costart.domain.actors import Actor
from costart.domain.errors import Conflict
from costart.projections import Views
from costart.service import Service, ViewsBehindError
from tests.builders import ManualClock, a_group, new_controller
from tests.rest.fake_placement import PlaceEverything

OWNER = Actor.user("alice")
DEADLINE_S = 30.0


def _until(condition, what: str) -> None:
    """Poll until ``condition()`` holds; fail naming ``what`` after the deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE_S}s")
        time.sleep(0.005)


class RecordingFeed:
    """A change feed that reads the controller's log like REST's watch hub does."""

    def __init__(self, controller: Controller) -> None:
        self._controller = controller
        self._fed = controller.world.position
        self.seen: list[int] = []
        self._lock = threading.Lock()

    def feed(self) -> int:
        with self._lock:
            for position, _ in self._controller.read_events(self._fed, None):
                self.seen.append(position)
                self._fed = position
            return self._fed

    @property
    def fed_position(self) -> int:
        return self._fed


class RecordingDriver:
    def __init__(self, refuse: bool = False) -> None:
        self.sessions: list[int] = []
        self.refuse = refuse

    def step(self, controller: Controller, now_ns: int) -> int:
        self.sessions.append(now_ns)
        if self.refuse:
            raise Conflict("the state moved on")
        return 0


def test_a_service_without_a_change_feed_answers_commands_and_reads(tmp_path: Path) -> None:
    svc = Service(new_controller(), Views(tmp_path / "v"))
    try:
        assert svc.watch is None
        row = svc.submit_spec(a_group("g1").with_member("a").build(), OWNER)
        assert svc.views.group("g1") == row
        svc.step()
        assert svc.views.position() == svc.controller.world.position
    finally:
        svc.close()


def test_the_service_keeps_its_change_feed_up_with_the_log(tmp_path: Path) -> None:
    controller = new_controller()
    controller.submit(a_group("before").with_member("a").build())
    start = controller.world.position
    feed = RecordingFeed(controller)
    svc = Service(controller, Views(tmp_path / "v"), watch=feed)
    try:
        assert feed.fed_position == start
        svc.submit_spec(a_group("after").with_member("a").build(), OWNER)
        _until(
            lambda: feed.fed_position == controller.world.position,
            "the feed reads the submit",
        )
        # Every position after the feed's start, once each, in order.
        assert feed.seen == list(range(start + 1, controller.world.position + 1))
    finally:
        svc.close()


class AheadFeed(RecordingFeed):
    """A feed that says it sent one position more than the log holds yet."""

    @property
    def fed_position(self) -> int:
        return self._controller.world.position + 1


def test_a_read_waits_for_the_position_the_feed_has_sent(tmp_path: Path) -> None:
    """A client that saw a feed frame must find it in the views it reads next: views
    that cannot get there fail the read, naming the position, rather than answer."""
    controller = new_controller()
    svc = Service(controller, Views(tmp_path / "v"), watch=AheadFeed(controller))
    svc._follower._wait_s = 0.2
    try:
        svc.submit_spec(a_group("g1").with_member("a").build(), OWNER)
        wanted = controller.world.position + 1
        with pytest.raises(ViewsBehindError, match=f"did not reach log position {wanted} "):
            svc.views.group("g1")
    finally:
        svc.close()


def test_the_session_driver_runs_after_each_session_at_its_time(tmp_path: Path) -> None:
    clock = ManualClock()
    controller = new_controller(clock)
    controller.placement = PlaceEverything()
    driver = RecordingDriver()
    svc = Service(controller, Views(tmp_path / "v"), clock=clock, driver=driver)
    try:
        first = clock.now_ns
        svc.step()
        clock.advance(3)
        svc.step()
        assert driver.sessions == [first, first + 3 * 10**9]
    finally:
        svc.close()


def test_a_driver_refused_by_the_domain_ends_only_that_session(tmp_path: Path) -> None:
    clock = ManualClock()
    controller = new_controller(clock)
    controller.placement = PlaceEverything()
    driver = RecordingDriver(refuse=True)
    svc = Service(controller, Views(tmp_path / "v"), clock=clock, driver=driver)
    try:
        controller.submit(a_group("g1").with_member("a").build())
        svc.step()  # the driver's Conflict is logged, not raised
        svc.step()
        assert len(driver.sessions) == 2
        assert svc.views.group("g1").state == "RUNNING"  # the session placed it first
    finally:
        svc.close()
