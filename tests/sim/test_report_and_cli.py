"""The report (JSON, PNG) and the `costart sim` command."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from costart.cli.exits import EXIT_USAGE
from costart.cli.sim_cmd import EXIT_INVALID, app
from costart.logging_setup import configure_logging
from costart.sim.results import ALL_POLICIES
from tests.sim.helpers import SCENARIOS, TRACES


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


def test_sim_with_a_store_keeps_that_policys_log_for_replay(tmp_path):
    from costart.cli.main import app as main_app

    runner = CliRunner()
    store = tmp_path / "store"
    trap = str(SCENARIOS / "sim-deadlock-trap.toml")
    args = ["--store", str(store), "sim", trap, "--out", str(tmp_path / "r")]
    ran = runner.invoke(main_app, [*args, "--log-policy", "atomic"])
    assert ran.exit_code == 0, ran.output
    report = json.loads((tmp_path / "r" / "report.json").read_bytes())
    logged = {p["policy"]: p for p in report["policies"]}["atomic"]
    verified = runner.invoke(main_app, ["--store", str(store), "replay", "verify"])
    assert verified.exit_code == 0, verified.output
    assert verified.stdout.startswith(f"ok: {logged['log_events']} events,")
    groups = runner.invoke(main_app, ["--store", str(store), "get", "groups", "-o", "json"])
    assert [g["name"] for g in json.loads(groups.stdout)] == ["gang-000", "gang-001", "gang-002"]


def test_an_option_that_would_do_nothing_is_an_error(tmp_path):
    from costart.cli.main import app as main_app

    runner = CliRunner()
    trap = str(SCENARIOS / "sim-deadlock-trap.toml")
    out = ["--out", str(tmp_path / "r")]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    cases = [
        (["sim", trap, "--log-policy", "atomic", *out], "--log-policy needs --store DIR"),
        (["sim", trap, "--compress", "2", *out], "--compress apply to --trace runs only"),
        (["sim", trap, "--policies", "reserve,greedy", *out], "--policies: unknown greedy"),
        (
            ["--store", str(tmp_path / "s"), "sim", trap, "--policies", "atomic", *out],
            "--log-policy reserve is not among the policies run (atomic)",
        ),
        (
            ["--store", str(tmp_path / "full"), "sim", trap, *out],
            "is not empty: a simulated log needs a new one",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(main_app, args)
        assert result.exit_code == EXIT_USAGE, (args, result.output)
        assert result.stderr.startswith("error: ") and message in result.stderr, args
    assert not (tmp_path / "r").exists() and not (tmp_path / "s").exists()


def test_a_run_that_stopped_early_is_plotted_flat_to_the_end() -> None:
    from costart.sim.metrics import Sample
    from costart.sim.report import HOUR_NS, series
    from tests.sim.helpers import run, setup_of

    result = run(setup_of("deadlock-trap", 1), "atomic")
    last = result.timeline[-1]
    hours, busy, waiting = series(result, last.t_ns + 20 * HOUR_NS)
    assert hours[-1] == last.t_ns / HOUR_NS + 20
    assert (busy[-1], waiting[-1]) == (float(last.busy_gpus), last.waiting)
    assert isinstance(result.timeline[0], Sample)


def test_the_per_workload_panel_reads_minutes_for_short_waits_and_hours_for_long_ones():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import msgspec

    from costart.sim.report import build_report, workload_bars
    from tests.sim.helpers import run, setup_of

    setup = setup_of("rl-post-training", 1)
    report = build_report(setup, [run(setup, "atomic")], [])
    _, axes = plt.subplots()
    workload_bars(axes, report)
    assert axes.get_ylabel() == "time to start (min): p50 bar, p99 mark"
    (result,) = report.policies
    slow = [msgspec.structs.replace(w, time_to_start_p99_s=3 * 3600.0) for w in result.workloads]
    long_report = msgspec.structs.replace(
        report, policies=[msgspec.structs.replace(result, workloads=slow)]
    )
    _, long_axes = plt.subplots()
    workload_bars(long_axes, long_report)
    assert long_axes.get_ylabel() == "time to start (h): p50 bar, p99 mark"
    plt.close("all")


def test_sim_draws_from_a_real_trace_or_refuses_what_it_cannot_read(tmp_path):
    """`costart sim TRACES --trace pai` runs the trace's first groups; an unknown trace
    kind is a usage error and a scenario that does not parse is reported invalid, each
    before anything is written."""
    from costart.cli.main import app as main_app

    runner = CliRunner()
    out = tmp_path / "r"
    args = ["sim", str(TRACES), "--trace", "pai", "--max-groups", "3", "--policies", "reserve"]
    result = runner.invoke(main_app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_bytes())
    [reserve] = report["policies"]
    assert (reserve["groups"], reserve["end_reason"]) == (3, "quiescent")
    bad = tmp_path / "bad.toml"
    bad.write_text("[cluster]\nnodes = 'many'\n")
    refused = tmp_path / "refused"
    unknown = runner.invoke(
        main_app, ["sim", str(TRACES), "--trace", "slurm", "--out", str(refused)]
    )
    assert unknown.exit_code == EXIT_USAGE and "--trace must be one of" in unknown.output
    invalid = runner.invoke(main_app, ["sim", str(bad), "--out", str(refused)])
    assert invalid.exit_code == EXIT_INVALID
    assert invalid.stderr.startswith(f"invalid scenario {bad}: ")
    assert not refused.exists()


def test_sim_reads_the_traces_folder_from_costart_traces_or_says_where_to_get_it(
    tmp_path, monkeypatch
):
    """Without a folder, `costart sim --trace` reads ``COSTART_TRACES``; unset, it is a
    usage error pointing at where the traces come from; a folder without the trace's files
    is refused naming the missing file. Nothing is written for a refusal."""
    from costart.cli.main import app as main_app

    runner = CliRunner()
    args = ["sim", "--trace", "dlrm", "--max-groups", "2", "--policies", "reserve"]
    monkeypatch.delenv("COSTART_TRACES", raising=False)
    unset = runner.invoke(main_app, [*args, "--out", str(tmp_path / "unset")])
    assert unset.exit_code == EXIT_USAGE
    assert "set COSTART_TRACES" in unset.output and "tests/data/traces/README.md" in unset.output
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("COSTART_TRACES", str(empty))
    missing = runner.invoke(main_app, [*args, "--out", str(tmp_path / "missing")])
    assert missing.exit_code == EXIT_INVALID
    assert "holds no alibaba_v2025_disaggregated_DLRM_trace.csv" in missing.stderr
    assert not (tmp_path / "unset").exists() and not (tmp_path / "missing").exists()
    monkeypatch.setenv("COSTART_TRACES", str(TRACES))
    out = tmp_path / "r"
    done = runner.invoke(main_app, [*args, "--out", str(out)])
    assert done.exit_code == 0, done.output
    [reserve] = json.loads((out / "report.json").read_bytes())["policies"]
    assert reserve["groups"] == 2
