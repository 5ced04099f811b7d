"""The ``recommended`` simulator policy submits every group in the mode the rule of
ADR 0115 gives it: the same log as the scenario's own modes where they agree with the
rule, other modes where they do not."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costart.cli.exits import EXIT_USAGE
from costart.cli.sim_cmd import controller_factory
from costart.logging_setup import configure_logging
from costart.sim.engine import Engine
from costart.sim.recommended_policy import RecommendedEmbedder
from costart.sim.results import embedder_for, run_policy
from costart.sim.scenario import parse_scenario
from costart.sim.setup import SimSetup, draw_setup
from tests.sim.helpers import SCENARIOS, setup_of


@pytest.fixture(autouse=True)
def _logging_back_on_stderr() -> Iterator[None]:
    """`costart sim` logs onto the runner's stderr, closed after the call."""
    yield
    configure_logging(level=logging.WARNING)


def _cut(name: str, horizon: str, was: str, edit: tuple[str, str] | None = None) -> SimSetup:
    return _cut_seed(name, horizon, was, 1, edit)


def _cut_seed(
    name: str, horizon: str, was: str, seed: int, edit: tuple[str, str] | None = None
) -> SimSetup:
    """Seed ``seed`` of scenario ``name`` with its horizon cut from ``was`` to
    ``horizon`` and, optionally, one edit of its text (``edit``: old, new)."""
    text = (SCENARIOS / f"sim-{name}.toml").read_text()
    cut = text.replace(f'horizon = "{was}"', f'horizon = "{horizon}"')
    if edit is not None:
        assert cut.count(edit[0]) == 1
        cut = cut.replace(*edit)
    assert cut != text
    return draw_setup(parse_scenario(cut.encode(), SCENARIOS), seed)


def test_where_the_scenario_already_follows_the_rule_the_log_is_the_same() -> None:
    # sim-starvation with its gangs asking plan-ahead (they ask reserve): 2-GPU jobs
    # atomic, gangs of 96 of 256 H100 GPUs plan-ahead, as the rule gives them.
    setup = _cut("starvation", "3h", "12h", ('mode = "reserve"', 'mode = "plan-ahead"'))
    recommended, _ = run_policy(setup, "recommended", controller_factory)
    specified, _ = run_policy(setup, "as-specified", controller_factory)
    assert recommended.policy == "recommended"
    assert recommended.log_sha256 == specified.log_sha256
    assert recommended.groups == specified.groups > 0
    # As written (gangs reserve) the rule changes their mode, and the log.
    written, _ = run_policy(_cut("starvation", "3h", "12h"), "as-specified", controller_factory)
    assert written.log_sha256 != recommended.log_sha256


def test_the_rule_overrides_modes_that_do_not_follow_it() -> None:
    # sim-deadlock-trap: gangs of 160 of 256 H100 GPUs asking reserve; the rule gives
    # plan-ahead.
    setup = setup_of("deadlock-trap", 1)
    embedder = embedder_for("recommended", setup)
    assert isinstance(embedder, RecommendedEmbedder)
    Engine(setup, embedder, controller_factory).run()
    assert embedder.chosen == {"plan-ahead": 3}
    # sim-mixed: the single and multi jobs, RL and serving groups are all under a
    # third of their pools (multi asks the default mode, reserve): every one atomic.
    mixed = _cut("mixed", "2h", "48h")
    embedder = embedder_for("recommended", mixed)
    assert isinstance(embedder, RecommendedEmbedder)
    Engine(mixed, embedder, controller_factory).run()
    assert set(embedder.chosen) == {"atomic"}
    recommended, _ = run_policy(mixed, "recommended", controller_factory)
    specified, _ = run_policy(mixed, "as-specified", controller_factory)
    atomic, _ = run_policy(mixed, "atomic", controller_factory)
    assert recommended.log_sha256 != specified.log_sha256
    assert recommended.log_sha256 == atomic.log_sha256


def test_costart_sim_runs_the_recommended_policy_by_name(tmp_path: Path) -> None:
    from costart.cli.main import app

    runner = CliRunner()
    trap = str(SCENARIOS / "sim-deadlock-trap.toml")
    ran = runner.invoke(
        app, ["sim", trap, "--policies", "recommended,atomic", "--out", str(tmp_path / "r")]
    )
    assert ran.exit_code == 0, ran.output
    report = json.loads((tmp_path / "r" / "report.json").read_bytes())
    assert [p["policy"] for p in report["policies"]] == ["recommended", "atomic"]
    refused = runner.invoke(app, ["sim", trap, "--policies", "recommend", "--out", str(tmp_path)])
    assert refused.exit_code == EXIT_USAGE
    assert "unknown recommend" in refused.stderr and "recommended)" in refused.stderr
