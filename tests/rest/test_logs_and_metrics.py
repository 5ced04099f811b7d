"""`costart serve` speaks one log format (uvicorn's lines too) and counts what operators
alert on: failures by reason, restarts, timeouts, releases, session durations."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from costart.cli.main import app
from costart.logging_setup import parse_level
from tests.rest.test_server import (
    ALICE,
    client,
    server,  # noqa: F401  (the module-scoped fixture)
    spec,
    wait_for_state,
)


def test_every_line_serve_writes_is_json_including_uvicorns(server):  # noqa: F811
    _, log_path, _ = server
    lines = log_path.read_text().splitlines()
    assert lines
    parsed = [json.loads(line) for line in lines]  # fails on any plain-text line
    uvicorn = [p for p in parsed if str(p.get("logger", "")).startswith("uvicorn")]
    assert uvicorn and all({"event", "level", "timestamp"} <= set(p) for p in uvicorn)


def test_metrics_list_the_event_counters_and_the_session_histogram(server):  # noqa: F811
    url, _, _ = server
    alice = client(url, ALICE)
    alice.post("/v1/groups", json=spec("counted"))
    wait_for_state(alice, "counted", "RUNNING")
    text = alice.get("/metrics").text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in (
        "costart_member_failures",
        "costart_member_restarts",
        "costart_group_restarts",
        "costart_reservation_timeouts",
        "costart_barrier_timeouts",
        "costart_releases",
    ):
        assert families[name].type == "counter", name
    session = families["costart_scheduling_session_duration_seconds"]
    assert session.type == "histogram"
    count = next(s.value for s in session.samples if s.name.endswith("_count"))
    assert count >= 1


def test_the_views_count_failures_by_reason_restarts_and_releases(tmp_path):
    from pathlib import Path

    from rich.console import Console

    from costart.cli.walkthrough import run_demo
    from costart.domain import events as ev
    from costart.projections import Views

    root = Path(__file__).resolve().parents[2]
    out = Console(file=(tmp_path / "out.txt").open("w"))
    controller = run_demo(root / "scenarios" / "rl-post-training.toml", out)
    events = [e for _, e in controller.read_events()]
    with Views(tmp_path / "views") as views:
        views.catch_up(controller)
        counts = views.counters()
    failures = [e.reason for e in events if isinstance(e, ev.MemberFailed)]
    assert failures  # the story has failures
    assert {k: v for k, v in counts.items() if k.startswith("member_failures:")} == {
        f"member_failures:{r}": failures.count(r) for r in set(failures)
    }
    assert counts.get("member_restarts", 0) == sum(
        isinstance(e, ev.MemberRestarted) for e in events
    )
    assert counts.get("releases", 0) == sum(isinstance(e, ev.PlacementReleased) for e in events)


@pytest.mark.parametrize(
    ("text", "level"), [("debug", logging.DEBUG), ("WARNING", logging.WARNING)]
)
def test_log_levels_are_named(text: str, level: int) -> None:
    assert parse_level(text) == level


def test_a_bad_log_level_is_a_usage_error() -> None:
    result = CliRunner().invoke(app, ["--log-level", "loud", "get", "groups"])
    assert result.exit_code == 2
    assert result.stderr == "error: bad log level 'loud': use debug, info, warning, error\n"
