"""`costart replay whatif` through the real entry point: on the demo's log it says what
it ran and that every decision came back; a changed setting shows where they part; bad
options are refused naming them, with nothing written; the kept log is a real store."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.run_cli import costart


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("demo")
    done = costart("--store", str(work / "store"), "demo")
    assert done.returncode == 0, done.stderr
    return work / "store"


def test_the_demo_log_comes_back_whole(demo_store: Path) -> None:
    done = costart("--store", str(demo_store), "replay", "whatif")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "policy: as-specified (each group in its recorded mode)" in out
    assert "cluster-demo.toml (as recorded)" in out and "settings changed: none" in out
    assert "times: ISO-8601 UTC, and +offset from the log's first event at t+4m19s" in out
    assert "sessions: every 10s, on the grid of the 56 recorded sessions" in out
    assert "assumptions (7):" in out and "assumed to succeed as long as" in out
    assert "(temporary, removed)" in out
    assert "every recorded decision is made again, at the same time: no divergence" in out
    rows = {line.split()[0]: line.split()[-2:] for line in out.splitlines() if "  " in line}
    assert rows["decisions"] == ["173", "173"]
    # The figures agree too, over one window: nothing changed, so no group's fate did.
    assert "FIGURE                    RECORDED      WHAT-IF  CHANGE" in out
    assert "wasted GPU-hours        39.0 GPU-h   39.0 GPU-h    same" in out
    assert "No group's fate changed." in out


def test_a_changed_setting_shows_where_the_logs_part(demo_store: Path, tmp_path: Path) -> None:
    kept, report = tmp_path / "whatif", tmp_path / "report"
    done = costart(
        "--store", str(demo_store), "replay", "whatif",
        "--set", "barrier.timeout=40s", "--keep", str(kept), "--out", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "settings changed: barrier.timeout=40s" in out
    assert "first divergence, decision #5:" in out
    assert (
        "recorded: t+4m20s (+276ms) GroupPlaced grpo-000 attempt=1 barrier_deadline=t+14m20s" in out
    )
    assert (
        "what-if:  t+4m20s (+276ms) GroupPlaced grpo-000 attempt=1 barrier_deadline=t+5m00s" in out
    )
    assert f"what-if log: {kept}\n" in out
    # The figures side by side: claims slower than 40 s keep 7 of the 8 groups from
    # ever passing their barrier, so they no longer start and hold what they are given.
    assert (
        "grpo-000  no longer starts, wasted +12.9 GPU-h  2m12s, succeeded, 18.2 GPU-h  ≥1d05h, waiting"
        in out
    )
    figures = json.loads((report / "outcomes.json").read_text())
    assert (figures["actual"]["label"], figures["whatif"]["label"]) == ("recorded", "what-if")
    assert (figures["actual"]["never_started"], figures["whatif"]["never_started"]) == (0, 7)
    assert figures["whatif"]["wasted_gpu_hours"] > figures["actual"]["wasted_gpu_hours"]
    assert figures["assumptions"][0].startswith("grpo-000/trainer: its 1st start was stopped")
    assert (report / "outcomes.png").stat().st_size > 10_000
    # The kept log is a store of its own: it verifies, and the replay commands open it.
    verified = costart("--store", str(kept), "replay", "verify")
    assert verified.returncode == 0, verified.stderr


def test_a_peer_policy_runs(demo_store: Path) -> None:
    done = costart("--store", str(demo_store), "replay", "whatif", "--policy", "volcano")
    assert done.returncode == 0, done.stderr
    assert "policy: volcano" in done.stdout and "first divergence" in done.stdout


def test_a_policy_that_splits_groups_still_counts_the_recorded_groups(demo_store: Path) -> None:
    """``independent`` submits each task as a group of its own: the tally still counts
    the 8 recorded groups, not its units."""
    done = costart("--store", str(demo_store), "replay", "whatif", "--policy", "independent")
    assert done.returncode == 0, done.stderr
    rows = {
        line[:24].strip(): line[24:].split()
        for line in done.stdout.splitlines()
        if line[:1] not in (" ", "") and len(line) > 24
    }
    assert rows["groups submitted"] == ["8", "8"]
    assert rows["groups started"][0] == "8"
    assert int(rows["decisions"][1]) > 173  # a decision per unit
    # A task's group is named by what it stands for, not by its hashed name alone.
    assert re.search(
        r"what-if:  t\+4m30s \(\+10s\) MemberPlaced grpo-000/rollout task \d "
        r"\(run as group t-[0-9a-f]{12}\) assignments=",
        done.stdout,
    )
    # Each group whose fate changed is one row, with every change it went through.
    changed = done.stdout[done.stdout.index("Groups whose fate changed most") :].splitlines()
    names = [line.split()[0] for line in changed[2:] if line.strip()]
    assert len(names) == len(set(names)) == 8
    assert re.search(r"grpo-000  succeeded → failed, wait \+30s, wasted -0\.8 GPU-h", done.stdout)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--set", "placement.tmeout=5m"], "--set placement.tmeout: unknown setting"),
        (["--set", "placement.timeout=5"], "--set placement.timeout=5: bad duration"),
        (["--policy", "fastest"], "--policy fastest: unknown"),
        (["--tail", "soon"], "--tail soon:"),
        (["--cluster", "no-such.toml"], "--cluster no-such.toml"),
        (["--out", "README.md"], "--out README.md is not a directory"),
    ],
)
def test_bad_options_are_refused_and_nothing_is_written(
    demo_store: Path, tmp_path: Path, args: list[str], said: str
) -> None:
    kept = tmp_path / "kept"
    done = costart("--store", str(demo_store), "replay", "whatif", *args, "--keep", str(kept))
    assert done.returncode == 2, done.stdout
    assert said in done.stderr
    assert not kept.exists()


def test_a_kept_log_needs_a_new_directory(demo_store: Path, tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    done = costart("--store", str(demo_store), "replay", "whatif", "--keep", str(tmp_path))
    assert done.returncode == 2
    assert "is not an empty directory" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["something"]


def test_no_log_is_a_usage_error(tmp_path: Path) -> None:
    done = costart("replay", "whatif")
    assert done.returncode == 2 and "give the log" in done.stderr


def test_a_simulated_trace_log_comes_back_whole_on_the_cluster_sim_wrote(tmp_path: Path) -> None:
    """`costart sim --trace` with a store writes the run's cluster beside its report;
    the what-if of that log on that cluster makes every decision again."""
    store, out = tmp_path / "store", tmp_path / "report"
    done = costart(
        "--store", str(store), "sim", "tests/data/traces", "--trace", "pai",
        "--max-groups", "60", "--node-losses", "2", "--policies", "reserve",
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cluster = out / "cluster.toml"
    assert f"--cluster {cluster} replay whatif" in done.stdout.replace("\n", "")
    done = costart("--store", str(store), "--cluster", str(cluster), "replay", "whatif")
    assert done.returncode == 0, done.stderr
    assert "every recorded decision is made again, at the same time: no divergence" in done.stdout
    assert "assumed to succeed just after it was stopped" in done.stdout
    # The demo's cluster is not the one the log ran on: refused before any re-run.
    done = costart("--store", str(store), "replay", "whatif")
    assert done.returncode == 2, done.stdout
    assert "cluster-demo.toml: the log places on node" in done.stderr
    assert "which the cluster given does not have: give the cluster it ran on" in done.stderr
    assert done.stdout == ""
    # Re-run on the demo's cluster as another cluster: the trace's groups do not fit
    # as they did.
    done = costart(
        "--store", str(store), "--cluster", str(cluster), "replay", "whatif",
        "--cluster", "scenarios/cluster-demo.toml",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "first divergence" in done.stdout
