"""The report (JSON, PNG) and the `costart sim` command."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from costart.cli.sim_cmd import app
from costart.logs import configure_logging
from costart.sim.results import ALL_POLICIES
from tests.sim.helpers import SCENARIOS


@pytest.fixture(autouse=True)
def _logging_back_on_stderr() -> Iterator[None]:
    """`costart sim` configures logging onto the runner's stderr, which is closed after
    the call: later tests that log would write to a closed file."""
    yield
    configure_logging(level=logging.WARNING)


def test_sim_prints_the_seed_and_its_options_and_writes_a_deterministic_report(tmp_path):
    runner = CliRunner()
    args = [str(SCENARIOS / "sim-deadlock-trap.toml"), "--seed", "11"]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    second = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code == second.exit_code == 0, first.output
    assert "seed=11" in first.output and "arrivals: 3" in first.output
    assert "deadlocked groups" in first.output
    report = (tmp_path / "a" / "report.json").read_bytes()
    assert report == (tmp_path / "b" / "report.json").read_bytes()
    policies = {p["policy"]: p for p in json.loads(report)["policies"]}
    assert set(policies) == set(ALL_POLICIES)
    assert policies["independent"]["deadlocked"] == 3
    assert (tmp_path / "a" / "report.png").read_bytes()[:4] == b"\x89PNG"


def test_a_bad_scenario_exits_with_the_field_named(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text((SCENARIOS / "sim-deadlock-trap.toml").read_text() + "\ncolour = 1\n")
    result = CliRunner().invoke(app, [str(bad), "--out", str(tmp_path)])
    assert result.exit_code == 3
    assert "colour: unknown field" in result.output


def test_sim_runs_with_the_hosts_allocator_and_says_so(tmp_path):
    args = [str(SCENARIOS / "sim-rl-post-training.toml"), "--policies", "reserve"]
    result = CliRunner().invoke(app, [*args, "--allocator", "outside-load", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "allocator=outside-load" in result.output and "binds raced" in result.output
    (policy,) = json.loads((tmp_path / "report.json").read_bytes())["policies"]
    assert policy["allocator"] == "outside-load" and policy["outside_work"] > 0


def test_an_unknown_allocator_is_refused(tmp_path):
    args = [str(SCENARIOS / "sim-rl-post-training.toml"), "--allocator", "magic"]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "--allocator must be one of in-memory, outside-load" in result.output
