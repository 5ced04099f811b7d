"""The composition root: every entry point gets its Controller from `costart.bootstrap`,
so the feasibility rule (a group that can never fit is refused, nothing written) holds on
every way in."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costart.bootstrap import DEMO_CLUSTER, Settings, bootstrap
from costart.cli.main import DEMO_SPEC, app
from costart.domain.errors import SpecError
from costart.domain.spec import parse_spec
from costart.projections import Views
from costart.service.controller_service import Service

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()
TOO_BIG = DEMO_SPEC.read_text().replace("gpu = 8,", "gpu = 64,", 1)


@pytest.fixture
def too_big(tmp_path: Path) -> Path:
    assert DEMO_SPEC.read_text() != TOO_BIG
    path = tmp_path / "too-big.toml"
    path.write_text(TOO_BIG)
    return path


def serve_refusal(tmp_path: Path) -> str:
    """What `serve` answers for the spec: its Service over the default settings."""
    controller = bootstrap(Settings(cluster=DEMO_CLUSTER))
    with Views(tmp_path / "serve-views") as views:
        with pytest.raises(SpecError) as refused:
            Service(controller, views).submit(TOO_BIG.encode(), "toml")
    return str(refused.value)


def test_direct_cli_submit_refuses_a_group_that_can_never_fit_exactly_as_serve_does(
    tmp_path: Path, too_big: Path
) -> None:
    store = tmp_path / "store"
    result = runner.invoke(app, ["--store", str(store), "submit", "--create", str(too_big)])
    assert result.exit_code == 3, result.output
    refusal = serve_refusal(tmp_path)
    assert "no node can run one task" in refusal
    assert result.stderr.strip() == f"error: {refusal}"
    listed = runner.invoke(app, ["--store", str(store), "get", "groups", "-o", "json"])
    assert listed.exit_code == 0 and listed.stdout.strip() == "[]"  # nothing written


def test_direct_cli_submit_uses_the_cluster_named_by_the_global_option(
    tmp_path: Path, too_big: Path
) -> None:
    roomy = tmp_path / "roomy.toml"
    roomy.write_text(DEMO_CLUSTER.read_text().replace("gpu = 8", "gpu = 64"))
    assert roomy.read_text() != DEMO_CLUSTER.read_text()
    store = tmp_path / "store"
    args = ["--store", str(store), "--cluster", str(roomy), "submit", "--create", str(too_big)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def test_validate_checks_feasibility_against_a_cluster_file(too_big: Path) -> None:
    assert runner.invoke(app, ["validate", str(too_big)]).exit_code == 0
    refused = runner.invoke(app, ["validate", str(too_big), "--cluster", str(DEMO_CLUSTER)])
    assert refused.exit_code == 3
    assert "no node can run one task" in refused.stderr
    fits = runner.invoke(app, ["validate", str(DEMO_SPEC), "--cluster", str(DEMO_CLUSTER)])
    assert fits.exit_code == 0 and f"fits {DEMO_CLUSTER}" in fits.stdout


def test_validate_names_a_bad_cluster_file(tmp_path: Path) -> None:
    bad = tmp_path / "cluster.toml"
    bad.write_text("nodes = 3\n")
    result = runner.invoke(app, ["validate", str(DEMO_SPEC), "--cluster", str(bad)])
    assert result.exit_code == 2 and "error:" in result.stderr


def test_a_controller_built_without_a_cluster_has_no_step_and_so_no_feasibility_check() -> None:
    controller = bootstrap(Settings(cluster=None))
    assert controller.placement is None
    assert controller.submit(parse_spec(TOO_BIG.encode(), "toml")).name == "grpo-run-42"


def _controller_constructions(path: Path, name: str = "Controller") -> list[int]:
    tree = ast.parse(path.read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name
    ]


def test_only_the_composition_root_constructs_a_controller() -> None:
    allowed = {ROOT / "costart" / "bootstrap.py"}
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("costart", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path not in allowed
        for line in _controller_constructions(path)
    }
    assert found == set()


def test_only_the_composition_root_opens_a_log_session() -> None:
    # The Controller opens a plain one itself when built directly (the tests' short form).
    allowed = {ROOT / "costart" / "bootstrap.py", ROOT / "costart" / "controller.py"}
    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("costart", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path not in allowed
        for line in _controller_constructions(path, "LogSession")
    }
    assert found == set()


def test_the_construction_scan_sees_a_direct_construction(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from costart.controller import Controller\nc = Controller(env={})\n")
    assert _controller_constructions(probe) == [2]
