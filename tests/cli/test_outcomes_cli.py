"""`costart replay outcomes`: one log's figures, or two logs side by side with the JSON
and the plot, on LMDB logs a simulated run wrote; bad input is one line and exit 2."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from typer.testing import CliRunner

from costart.bootstrap import Settings, sim_controller_factory
from costart.cli.exits import EXIT_USAGE
from costart.cli.main import app
from costart.controller import Controller
from costart.replay.outcomes.compare import Comparison
from costart.replay.outcomes.figures import LogFigures
from costart.sim.results import run_policy
from costart.sim.setup import HOUR_NS
from tests.cli.test_startup_imports import loaded
from tests.sim.helpers import setup_of

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "scenarios" / "cluster-demo.toml")
runner = CliRunner()
# Raw nanoseconds (or any long run of digits) never reach a person.
RAW_NUMBER = re.compile(r"\d{10,}")


def _log(where: Path, policy: str, horizon_ns: int | None = None) -> Path:
    """A simulated deadlock-trap run's log in a new LMDB store (cut at ``horizon_ns``)."""
    setup = setup_of("deadlock-trap", 1)
    if horizon_ns is not None:
        options = msgspec.structs.replace(setup.options, horizon_ns=horizon_ns)
        setup = msgspec.structs.replace(setup, options=options)
    _, engine = run_policy(
        setup, policy, sim_controller_factory(Settings(store=str(where), cluster=None))
    )
    assert isinstance(engine.controller, Controller)
    engine.controller.close()
    return where


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("outcomes")
    # atomic cut after 2 hours: the third gang never started (a censored wait).
    return _log(tmp / "atomic", "atomic", 2 * HOUR_NS), _log(tmp / "reserve", "reserve")


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_one_logs_figures_and_each_groups_fate(logs: tuple[Path, Path]) -> None:
    code, out = _run("replay", "outcomes", "--log", str(logs[0]), "--cluster", CLUSTER, "--groups")
    assert code == 0, out
    assert re.search(r"time to start p99\s+≥\S+", out)  # censored: a lower bound
    assert re.search(r"wasted GPU-hours\s+\d+\.\d GPU-h", out)
    assert re.search(r"gang-002\s+t\+\S+\s+-\s+waiting\s+≥", out)
    assert "capacity from" in out and "384 GPUs" in out
    assert not RAW_NUMBER.search(out)


def test_one_logs_json_decodes_as_its_figures(logs: tuple[Path, Path]) -> None:
    code, out = _run(
        "replay", "outcomes", "--log", str(logs[1]), "--cluster", CLUSTER, "-o", "json"
    )
    assert code == 0, out
    figures = msgspec.json.decode(out, type=LogFigures)
    assert (figures.groups, figures.started, figures.never_started) == (3, 3, 0)


def test_two_logs_side_by_side_with_the_json_and_the_plot(
    logs: tuple[Path, Path], tmp_path: Path
) -> None:
    out_dir = tmp_path / "report"
    code, out = _run(
        "replay", "outcomes", "--log", str(logs[0]), "--cluster", CLUSTER,
        "--against", str(logs[1]), "--out", str(out_dir),
    )  # fmt: skip
    assert code == 0, out
    assert re.search(r"never started\s+1\s+0\s+-1", out)
    assert re.search(r"time to start p99\s+≥\S+\s+\S+\s+~", out)  # a change between bounds
    assert re.search(r"gang-002\s+now starts", out)
    # One row per group: its start changed, so its wait's change is its two waits,
    # the one that never ended a bound (≥).
    assert re.search(r"^gang-002  now starts, wasted \+\S+ GPU-h\s+≥\S+, waiting, ", out, re.M)
    assert re.search(r"^gang-001  running → succeeded, ", out, re.M)  # ended otherwise
    table = out[out.index("Groups whose fate changed most") :]
    assert len(re.findall(r"^gang-002 ", table, re.M)) == 1
    # The cut run went quiet before the other ended: said, with how it is counted on.
    assert re.search(r"^FIGURE\s+ATOMIC\s+RESERVE\s+CHANGE", out, re.MULTILINE)  # named by dir
    assert re.search(
        r"^assumed: atomic: nothing happened in the \S+ after its last event", out, re.M
    )
    assert re.search(r"atomic: .*its last event at t\+\S+: carried as it was then", out)
    assert not RAW_NUMBER.search(out)
    comparison = msgspec.json.decode((out_dir / "outcomes.json").read_bytes(), type=Comparison)
    assert [c.group for c in comparison.start_changed] == ["gang-002"]
    # Both over one length of time: the shorter log is carried to the longer's length.
    assert comparison.actual.window.span_ns == comparison.whatif.window.span_ns
    png = (out_dir / "outcomes.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--out", "x"), "--out writes a comparison"),
        (("-o", "yaml"), "unknown --output 'yaml'"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    logs: tuple[Path, Path], args: tuple[str, ...], message: str
) -> None:
    code, out = _run("replay", "outcomes", "--log", str(logs[0]), "--cluster", CLUSTER, *args)
    assert code == EXIT_USAGE and message in out


def test_a_cluster_without_the_logs_nodes_is_refused_naming_one(
    logs: tuple[Path, Path], tmp_path: Path
) -> None:
    small = tmp_path / "small.toml"
    small.write_text('levels = ["rack"]\n[[nodes]]\nname = "n1"\npath = ["r1"]\ngpu = 8\n')
    code, out = _run("replay", "outcomes", "--log", str(logs[0]), "--cluster", str(small))
    assert code == EXIT_USAGE
    assert "which the cluster given does not have" in out


def test_other_replay_commands_do_not_load_the_simulator(
    logs: tuple[Path, Path], tmp_path: Path
) -> None:
    # `outcomes` shares the replay commands' app: what it needs loads when it runs.
    verify = loaded(tmp_path, "replay", "verify", "--log", str(logs[1]))
    heavy = {"costart.replay.outcomes", "costart.sim.engine", "costart.sim.metrics", "matplotlib"}
    assert not heavy & verify
    outcomes = loaded(tmp_path, "replay", "outcomes", "--log", str(logs[1]), "--cluster", CLUSTER)
    assert {"costart.replay.outcomes", "costart.sim.metrics"} <= outcomes
