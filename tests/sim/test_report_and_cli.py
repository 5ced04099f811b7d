"""The report (JSON, PNG) and the `costart sim` command."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from costart.cli.sim_cmd import app
from costart.sim.results import ALL_POLICIES
from tests.sim.helpers import SCENARIOS


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
