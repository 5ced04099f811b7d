"""Per-workload figures: every group counted once, under the workload it came from, and
the per-workload GPU-hours add up to the pooled ones."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from costart.cli.sim_cmd import app, seconds_text
from costart.sim.workload import size_class
from tests.builders import a_group
from tests.sim.helpers import SCENARIOS, run, setup_of


@pytest.mark.parametrize(
    ("scenario", "policy"),
    [("deadlock-trap", "independent"), ("deadlock-trap", "reserve"), ("mixed", "atomic")],
)
def test_per_workload_figures_add_up_to_the_pooled_ones(scenario, policy):
    result = run(setup_of(scenario, 2), policy)
    parts = result.workloads
    assert [w.workload for w in parts] == sorted({w.workload for w in parts})
    assert sum(w.groups for w in parts) == result.groups
    assert sum(w.started for w in parts) == result.started
    assert sum(w.never_started for w in parts) == result.never_started
    assert sum(w.partial_starts for w in parts) == result.partial_starts
    for field in ("idle_held_gpu_hours", "partial_start_waste_gpu_hours", "busy_gpu_hours"):
        pooled = getattr(result, field)
        assert sum(getattr(w, field) for w in parts) == pytest.approx(pooled, abs=1e-3 * len(parts))


def test_a_scenario_groups_are_reported_under_their_workload_names():
    result = run(setup_of("mixed", 1), "reserve")
    names = [w.workload for w in result.workloads]
    assert names == ["grpo", "multi", "serving", "single"]
    grpo = result.workloads[0]
    assert grpo.groups == 4
    assert grpo.idle_held_gpu_hours > 0  # reservations held for the big gangs


def test_a_trace_group_falls_in_a_size_class():
    assert size_class(a_group().with_member("m", gpu=0, cpu=1).build()) == "cpu-only"
    assert size_class(a_group().with_member("m", gpu=4, tasks=1).build()) == "single-task"
    assert size_class(a_group().with_member("m", gpu=1, tasks=8).build()) == "gang-1-8-gpu"
    assert size_class(a_group().with_member("m", gpu=8, tasks=8).build()) == "gang-9-64-gpu"
    assert size_class(a_group().with_member("m", gpu=8, tasks=9).build()) == "gang-65+-gpu"


def test_the_sim_command_reports_each_workload_in_its_table_json_and_plot(tmp_path):
    result = CliRunner().invoke(
        app,
        [
            str(SCENARIOS / "sim-mixed.toml"),
            "--seed",
            "1",
            "--policies",
            "atomic",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "by workload" in result.output
    for name in ("grpo", "multi", "serving", "single"):
        assert f"│ {name} " in result.output
    report = json.loads((tmp_path / "report.json").read_bytes())
    names = [w["workload"] for w in report["policies"][0]["workloads"]]
    assert names == ["grpo", "multi", "serving", "single"]
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"


def test_durations_are_rounded_to_two_units():
    # Both tables of the report write durations one way (`costart.display.timefmt`).
    assert [seconds_text(s) for s in (None, 0, 4.4, 725, 9822.3, 90061)] == [
        "-",
        "0s",
        "4.4s",
        "12m05s",
        "2h43m",
        "1d01h",
    ]
