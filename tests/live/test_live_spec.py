"""The live scenario's spec, fitted to one run (`costart.cli.live.spec.localize`)."""

from __future__ import annotations

import copy
import socket
import tomllib
from pathlib import Path

import msgspec

from costart.bootstrap import Settings, build_placement
from costart.cli.live.spec import free_port_block, install_programs, localize, probe_files
from costart.domain.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "scenarios" / "live-rl.toml"
CLUSTER = ROOT / "scenarios" / "cluster-live.toml"


def fitted(run_dir: Path) -> dict[str, object]:
    doc = tomllib.loads(SPEC.read_text())
    taken: set[int] = set()
    return localize(doc, run_dir, lambda n: free_port_block(n, taken, 40_000))


def test_the_shipped_spec_is_valid_and_fits_its_cluster() -> None:
    spec = parse_spec(SPEC.read_bytes(), "toml")
    step = build_placement(Settings(cluster=CLUSTER))
    assert step is not None
    step.check_feasible(spec)
    assert [m.name for m in spec.members] == ["trainer", "rollout", "reward"]
    assert all(m.run is not None and m.run.probe("weights") is not None for m in spec.members)


def test_a_fitted_spec_keeps_its_paths_inside_the_work_root(tmp_path: Path) -> None:
    local = fitted(tmp_path)
    spec = parse_spec(msgspec.json.encode(local), "json")  # still a valid spec
    for member in spec.members:
        run = member.run
        assert run is not None
        assert run.cwd == "scenarios/live"
        assert run.log_dir == "task-logs"
        assert dict(run.env)["LIVE_STARTS_DIR"] == str(tmp_path / "starts")
        probe = run.probe("weights")
        assert probe is not None and probe.target == "var/live/weights.bin"
    rollout = spec.member("rollout").run
    assert rollout is not None
    assert dict(rollout.env)["LIVE_WEIGHTS"] == "var/live/weights.bin"


def test_the_programs_are_installed_in_the_work_root_without_what_they_wait_for(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "repository"
    (repository / "scenarios" / "live" / "var" / "live").mkdir(parents=True)
    (repository / "scenarios" / "live" / "trainer.py").write_text("print('train')\n")
    (repository / "scenarios" / "live" / "var" / "live" / "weights.bin").write_text("old")
    run_dir = tmp_path / "run"
    install_programs(tomllib.loads(SPEC.read_text()), repository, run_dir)
    installed = run_dir / "scenarios" / "live"
    assert (installed / "trainer.py").read_text() == "print('train')\n"
    assert not (installed / "var").exists()


def test_fitting_leaves_the_document_it_was_given_as_it_was(tmp_path: Path) -> None:
    doc = tomllib.loads(SPEC.read_text())
    before = copy.deepcopy(doc)
    localize(doc, tmp_path, lambda n: free_port_block(n, set(), 40_000))
    assert doc == before


def test_the_probed_files_are_listed_once_each() -> None:
    doc = tomllib.loads(SPEC.read_text())
    assert probe_files(doc) == ["scenarios/live/var/live/weights.bin"]


def test_a_port_block_skips_a_port_something_listens_on() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        first = free_port_block(2, set(), port)
        assert port not in range(first, first + 2)


def test_a_port_block_skips_ports_handed_out_already() -> None:
    taken: set[int] = set()
    first = free_port_block(3, taken, 41_000)
    second = free_port_block(3, taken, 41_000)
    assert set(range(first, first + 3)).isdisjoint(range(second, second + 3))
