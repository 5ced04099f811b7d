"""The serve loop in-process: sessions place, the claim driver readies and starts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from costart.adapters.simulated_claims import ClaimDriver
from costart.bootstrap import Settings, build_placement
from costart.domain.actors import Actor
from costart.placement import ClusterError, CoPlacementStep
from costart.projections import Views
from costart.rest.auth import TokenError, Tokens
from costart.rest.watch import WatchHub
from costart.service.controller_service import Service
from tests.builders import ManualClock, a_group, new_controller
from tests.rest.fake_placement import PlaceEverything

SECOND_NS = 10**9
OWNER = Actor.user("alice")


ROOT = Path(__file__).resolve().parents[2]


def service(tmp_path: Path, delay_s: int = 2):
    clock = ManualClock()
    controller = new_controller(clock)
    controller.placement = PlaceEverything()
    svc = Service(
        controller,
        Views(tmp_path / "v"),
        watch=WatchHub.following(controller.read_events, controller.world),
        clock=clock,
        driver=ClaimDriver(delay_s * SECOND_NS),
    )
    return svc, clock


def test_a_session_places_then_claims_turn_ready_after_the_delay_and_members_start(tmp_path):
    svc, clock = service(tmp_path)
    spec = a_group().with_member("a", claims=("gpus",)).with_member("b", replicas=2).build()
    svc.controller.submit(spec)
    svc.step()
    assert svc.views.group("g1").state == "PLACED"
    clock.advance(1)
    svc.step()
    assert svc.views.group("g1").state == "PLACED"  # the claim is not due yet
    clock.advance(1)
    svc.step()
    assert svc.views.group("g1").state == "RUNNING"
    svc.step()
    assert {m.state for m in svc.views.members("g1")} == {"RUNNING"}


def test_the_loop_runs_sessions_until_stopped(tmp_path):
    svc, clock = service(tmp_path, delay_s=0)
    svc.controller.submit(a_group().with_member("a").build())
    svc.refresh()
    svc.start(0.01)
    try:
        for _ in range(500):
            if svc.views.group("g1").state == "RUNNING":
                break
            clock.advance(1)
            time.sleep(0.01)
    finally:
        svc.stop()
    assert svc.views.group("g1").state == "RUNNING"


def test_placement_factories_load_by_name_and_the_default_is_the_co_placement_step():
    fake = Settings(cluster=None, placement="tests.rest.fake_placement:factory")
    assert isinstance(build_placement(fake), PlaceEverything)
    with pytest.raises(ValueError, match="cannot load placement factory"):
        build_placement(Settings(cluster=None, placement="tests.rest.fake_placement:nope"))
    step = build_placement(Settings(cluster=ROOT / "scenarios" / "cluster-demo.toml"))
    assert isinstance(step, CoPlacementStep) and len(step.cluster) == 64
    assert build_placement(Settings(cluster=None)) is None  # a controller placed by hand
    with pytest.raises(ClusterError, match="cluster file is needed"):
        build_placement(Settings(cluster=None, placement="costart.placement:from_cluster_file"))


def test_tokens_files_map_tokens_to_users_and_roles(tmp_path):
    path = tmp_path / "tokens.toml"
    path.write_text(
        '[tokens.alice-token-0123456789]\nuser = "alice"\n'
        '[tokens.root-token-0123456789]\nuser = "root"\nrole = "admin"\n'
    )
    tokens = Tokens.from_toml(path)
    alice = tokens.user_for_header("Bearer alice-token-0123456789")
    assert alice is not None and alice.may_act_for("alice") and not alice.may_act_for("bob")
    root = tokens.user_for_header("bearer root-token-0123456789")
    assert root is not None and root.may_act_for("bob")
    assert tokens.user_for_header("Bearer wrong") is None
    assert tokens.user_for_header(None) is None
    path.write_text('[tokens.short]\nuser = "x"\n')
    with pytest.raises(TokenError, match="shorter"):
        Tokens.from_toml(path)


def test_a_command_is_answered_from_the_controller_as_the_views_then_show_it(tmp_path):
    svc, _ = service(tmp_path)
    try:
        spec = a_group("g1").with_member("a", claims=("gpus",)).with_member("b", replicas=2)
        spec = spec.build()
        answered = svc.submit_spec(spec)
        # The next read waits until the views hold the submit, and shows the same row.
        assert svc.views.group("g1") == answered
        scaled = svc.scale("g1", "b", 3, OWNER)
        assert [m for m in svc.views.members("g1") if m.name == "b"] == [scaled]
        cancelled = svc.cancel("g1", OWNER)
        assert cancelled.state == "CANCELLED"
        assert svc.views.group("g1") == cancelled
    finally:
        svc.close()


def test_reads_wait_for_the_views_to_hold_every_command_answered_before(tmp_path):
    svc, _ = service(tmp_path)
    try:
        for i in range(20):
            svc.submit_spec(a_group(f"r{i}").with_member("a").build())
            # No refresh between: each read must still see the submit just answered.
            assert svc.views.group(f"r{i}").state == "PENDING"
        assert svc.views.position() == svc.controller.world.position
    finally:
        svc.close()


def test_a_read_whose_views_cannot_catch_up_is_503_naming_the_position(tmp_path):
    from litestar.testing import TestClient

    from costart.rest.auth import User
    from costart.rest.http_app import create_app

    svc, _ = service(tmp_path)
    stuck = svc._follower.position
    svc._follower._catch_up = lambda: stuck  # the views stop moving (a stuck disk)
    svc._follower._wait_s = 0.5
    svc.controller.submit(a_group("late").with_member("a").build())
    app = create_app(svc, Tokens({"t0k3n": User(name="root", role="admin")}), svc.watch)
    try:
        with TestClient(app=app) as client:
            answer = client.get("/v1/groups/late", headers={"Authorization": "Bearer t0k3n"})
        assert answer.status_code == 503, answer.text
        position = svc.controller.world.position
        assert f"did not reach log position {position} within 0.5s" in answer.json()["error"]
    finally:
        svc.close()


def test_the_app_refuses_a_watch_hub_that_is_not_the_services_change_feed(tmp_path):
    """`GET /v1/watch` streams the hub the service keeps up with the log; any other
    hub would never move."""
    from costart.rest.http_app import create_app

    svc, _ = service(tmp_path)
    try:
        stray = WatchHub.following(svc.controller.read_events, svc.controller.world)
        with pytest.raises(ValueError, match="must be the service's change feed"):
            create_app(svc, Tokens({}), stray)
        assert create_app(svc, Tokens({}), svc.watch) is not None
    finally:
        svc.close()
