"""`costart validate FILE --cluster C` prints the placement mode the rule of ADR 0115
recommends for the group on that cluster, and says when the spec asks another."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from costart.bootstrap import DEMO_CLUSTER
from costart.cli.main import DEMO_SPEC, app

runner = CliRunner()


def test_a_group_under_a_third_of_its_pool_is_recommended_atomic() -> None:
    # The RL spec asks reserve; its 45 GPUs to start are 18% of the H100 block.
    result = runner.invoke(app, ["validate", str(DEMO_SPEC), "--cluster", str(DEMO_CLUSTER)])
    assert result.exit_code == 0, result.output
    assert "recommended placement mode: atomic: 45 of 256 GPUs in its pool (18%);" in result.stdout
    assert "(the spec asks reserve)" in result.stdout


def test_a_half_partition_gang_is_recommended_plan_ahead(tmp_path: Path) -> None:
    spec = tmp_path / "gang.toml"
    spec.write_text(
        'name = "pretrain"\nowner = "alice"\n[placement]\nmode = "reserve"\n'
        '[[members]]\nname = "trainer"\nkind = "job"\ntasks = 16\n'
        'shape = { gpu = 8, cpu = 64, mem_gb = 512, gpu_type = "H100" }\n'
    )
    result = runner.invoke(app, ["validate", str(spec), "--cluster", str(DEMO_CLUSTER)])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith("recommended"))
    assert line.startswith("recommended placement mode: plan-ahead: 128 of 256 GPUs in its pool")
    assert line.endswith("(the spec asks reserve)")


def test_without_a_cluster_nothing_is_recommended() -> None:
    result = runner.invoke(app, ["validate", str(DEMO_SPEC)])
    assert result.exit_code == 0 and "recommended" not in result.stdout
