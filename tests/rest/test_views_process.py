"""The views folded in a process of their own (`costart.server.views_process`): reads still
see every command answered before them, the fold's failures reach the readers, and a
dead views process is replaced."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.bootstrap import Settings, bootstrap
from costart.domain.actors import Actor
from costart.projections import Views
from costart.server.errors import ViewsProcessError
from costart.server.views_process import ViewsProcess
from costart.service.controller_service import Service
from tests.builders import a_group
from tests.rest.serving import DEADLINE_S, ROOT

ALICE = Actor.user("alice")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Service, ViewsProcess]]:
    """A Service on an LMDB store whose views fold only in the views process."""
    settings = Settings(store=str(tmp_path / "store"), cluster=None)
    controller = bootstrap(settings)
    views = Views(tmp_path / "views")
    folder = ViewsProcess(settings.controller_env(), tmp_path / "views")
    service = Service(controller, views, fold=folder.catch_up)

    def not_here(*_: object) -> int:
        raise AssertionError("the views were folded in the server's process")

    views.catch_up = not_here  # type: ignore[method-assign]
    try:
        yield service, folder
    finally:
        service.close()
        folder.close()
        views.close()
        controller.close()


def test_reads_see_every_submit_answered_before_them(served):
    service, folder = served
    for i in range(20):
        answered = service.submit_spec(a_group(f"g{i}").with_member("a").build(), ALICE)
        # No wait between: the read itself waits for the views process.
        assert service.views.group(f"g{i}") == answered
    assert service.views.position() == service.controller.world.position
    assert folder.pid is not None and folder.pid != os.getpid()


def test_a_killed_views_process_is_replaced_and_the_views_catch_up(served):
    service, folder = served
    service.submit_spec(a_group("before").with_member("a").build(), ALICE)
    assert service.views.group("before").state == "PENDING"
    pid = folder.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + DEADLINE_S
    while folder.alive():
        assert time.monotonic() < deadline, "the views process did not die"
        time.sleep(0.05)
    service.submit_spec(a_group("after").with_member("a").build(), ALICE)
    assert service.views.group("after").state == "PENDING"
    assert folder.starts == 2 and folder.pid != pid


def test_a_views_process_that_cannot_open_the_log_fails_each_catch_up_naming_why(tmp_path):
    env = {**os.environ, "PERSISTENCE_MODULE": "costart.no_such_store"}
    folder = ViewsProcess(env, tmp_path / "views")
    try:
        for _ in range(2):  # every time, not only once
            with pytest.raises(Exception, match="no_such_store"):
                folder.catch_up()
    finally:
        folder.close()
    assert folder.pid is None


UNPICKLABLE_STORE = '''
class WeirdStoreError(Exception):
    """Rebuilt from its args by pickle, and its init takes two: cannot be handed over."""

    def __init__(self, a, b):
        super().__init__(f"weird store {a} {b}")


raise WeirdStoreError(1, 2)
'''


def test_an_error_the_views_process_cannot_hand_over_arrives_as_a_views_process_error(tmp_path):
    """The child wraps an error pickle cannot rebuild in `ViewsProcessError`, which must
    unpickle in the server: defined in a module the child does not run as ``__main__``
    (else: "Can't get attribute 'ViewsProcessError' on <module '__main__'>")."""
    (tmp_path / "weird_store.py").write_text(UNPICKLABLE_STORE)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", ""), str(ROOT)])
    env = {**os.environ, "PERSISTENCE_MODULE": "weird_store", "PYTHONPATH": path}
    folder = ViewsProcess(env, tmp_path / "views")
    try:
        with pytest.raises(ViewsProcessError, match="WeirdStoreError: weird store 1 2"):
            folder.catch_up()
    finally:
        folder.close()
