"""The live scenario's spec, fitted to one run (`costart.cli.live.spec.localize`)."""

from __future__ import annotations

import copy
import socket
import tomllib
from pathlib import Path

import msgspec

from costart.bootstrap import Settings, build_placement
from costart.cli.live.spec import free_port_block, localize, probe_files
from costart.domain.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "scenarios" / "live-rl.toml"
CLUSTER = ROOT / "scenarios" / "cluster-live.toml"


def fitted(run_dir: Path) -> dict[str, object]:
    doc = tomllib.loads(SPEC.read_text())
    taken: set[int] = set()
    return localize(doc, ROOT, run_dir, lambda n: free_port_block(n, taken, 40_000))


def test_the_shipped_spec_is_valid_and_fits_its_cluster() -> None:
    spec = parse_spec(SPEC.read_bytes(), "toml")
    step = build_placement(Settings(cluster=CLUSTER))
    assert step is not None
    step.check_feasible(spec)
    assert [m.name for m in spec.members] == ["trainer", "rollout", "reward"]
    assert all(m.run is not None and m.run.probe("weights") is not None for m in spec.members)


def test_a_fitted_spec_runs_in_the_run_directory_from_the_checkout(tmp_path: Path) -> None:
    local = fitted(tmp_path)
    spec = parse_spec(msgspec.json.encode(local), "json")  # still a valid spec
    for member in spec.members:
        run = member.run
        assert run is not None
        assert run.cwd == str(ROOT / "scenarios" / "live")
        assert run.log_dir == str(tmp_path / "task-logs")
        assert dict(run.env)["LIVE_STARTS_DIR"] == str(tmp_path / "starts")
        probe = run.probe("weights")
        assert probe is not None and probe.target == str(tmp_path / "var" / "live" / "weights.bin")
    rollout = spec.member("rollout").run
    assert rollout is not None
    assert dict(rollout.env)["LIVE_WEIGHTS"] == str(tmp_path / "var" / "live" / "weights.bin")


def test_each_serving_member_gets_its_own_free_block_of_ports(tmp_path: Path) -> None:
    spec = parse_spec(msgspec.json.encode(fitted(tmp_path)), "json")
    ports = {m.name: m.run.ports(m.count) for m in spec.members if m.run and m.run.port}
    assert set(ports) == {"rollout", "reward"}
    assert len(ports["rollout"]) == 3 and len(ports["reward"]) == 1
    assert set(ports["rollout"]).isdisjoint(ports["reward"])


def test_fitting_leaves_the_document_it_was_given_as_it_was(tmp_path: Path) -> None:
    doc = tomllib.loads(SPEC.read_text())
    before = copy.deepcopy(doc)
    localize(doc, ROOT, tmp_path, lambda n: free_port_block(n, set(), 40_000))
    assert doc == before


def test_the_probed_files_are_listed_once_each() -> None:
    assert probe_files(tomllib.loads(SPEC.read_text())) == ["var/live/weights.bin"]


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
