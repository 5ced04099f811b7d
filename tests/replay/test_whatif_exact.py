"""The what-if's exactness: run with the recorded settings and policy, the re-run of a
log's recorded inputs makes every recorded decision again, at the same controller time
(ADR 0132). On the demo's log (made by the demo's own code) and on a `costart sim` log
written through the command line, both read back read-only from LMDB."""

from __future__ import annotations

import io
import statistics
import subprocess
import sys
from pathlib import Path
from typing import cast

import msgspec
import pytest
from rich.console import Console

from costart.bootstrap import Settings, sim_controller_factory
from costart.cli.sim_demo import SCENARIO, run_sim_demo
from costart.controller import Controller
from costart.placement.cluster_file import load_cluster
from costart.replay.whatif.decisions import decisions, first_divergence
from costart.replay.whatif.extract import recorded_workload
from costart.replay.whatif.summary import compare
from costart.sim.distributions import Const
from costart.sim.results import run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import draw_setup
from costart.sim.workload import ClaimOutcome, RecordedMember
from tests.pg_support import fresh_schema
from tests.replay.whatif_helpers import read_log, rerun, shape

ROOT = Path(__file__).resolve().parents[2]
DEMO_CLUSTER = ROOT / "scenarios" / "cluster-demo.toml"


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `costart demo` writes: its logged policy's run, by the demo's own code."""
    work = tmp_path_factory.mktemp("demo")
    run_sim_demo(work / "store", work / "report", Console(file=io.StringIO()))
    return work / "store"


@pytest.fixture(scope="module")
def sim_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `costart sim` log: another scenario, policy and seed, through the command line
    (its first session falls 1 ns before the grid: the engine's first-session rule)."""
    work = tmp_path_factory.mktemp("sim")
    done = subprocess.run(
        [
            sys.executable, "-m", "costart.cli.main", "--store", str(work / "store"), "sim",
            "scenarios/sim-disaggregated-serving.toml", "--seed", "2",
            "--policies", "atomic", "--log-policy", "atomic", "--out", str(work / "report"),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return work / "store"


@pytest.fixture(scope="module")
def reserve_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated log with reservations held, timed out and released (the deadlock
    trap under ``reserve``), written to LMDB by the simulator's own factory."""
    store = tmp_path_factory.mktemp("reserve") / "store"
    setup = draw_setup(load_scenario(ROOT / "scenarios" / "sim-deadlock-trap.toml"), 1)
    factory = sim_controller_factory(Settings(store=str(store), cluster=None))
    _, engine = run_policy(setup, "reserve", factory)
    cast(Controller, engine.controller).close()
    return store


@pytest.mark.parametrize("log", ["demo_store", "sim_store", "reserve_store"])
def test_the_recorded_settings_make_every_recorded_decision_again(
    log: str, request: pytest.FixtureRequest
) -> None:
    store: Path = request.getfixturevalue(log)
    recorded, before = read_log(store)
    after = rerun(recorded, load_cluster(DEMO_CLUSTER))
    a, b = decisions(before), decisions(after)
    divergence = first_divergence(a, b)
    assert divergence is None, f"first divergence at decision #{divergence.index}: {divergence}"
    assert len(a) > 60  # placements, releases, barrier releases, failures handled
    kinds = {d.kind for d in a}
    assert {"MemberPlaced", "GroupPlaced", "BarrierReleased"} <= kinds
    # The inputs come back at their times too: the whole log has the same shape.
    assert shape(after) == shape(before)
    print(f"{log}: {len(a)} decisions of {len(before)} events, kinds {sorted(kinds)}")


def test_a_postgresql_log_is_read_and_reproduced(pg_url: str) -> None:
    """The same on a log in PostgreSQL, read through its own replay log."""
    with fresh_schema(pg_url) as url:
        setup = draw_setup(load_scenario(ROOT / "scenarios" / "sim-deadlock-trap.toml"), 2)
        factory = sim_controller_factory(Settings(store=url, cluster=None))
        _, engine = run_policy(setup, "reserve", factory)
        cast(Controller, engine.controller).close()
        recorded, before = read_log(url)
    after = rerun(recorded, load_cluster(DEMO_CLUSTER))
    a = decisions(before)
    assert len(a) > 60 and first_divergence(a, decisions(after)) is None
    assert shape(after) == shape(before)


def test_the_logs_hold_what_the_exactness_rests_on(
    demo_store: Path, sim_store: Path, reserve_store: Path
) -> None:
    """Between them the logs hold node losses, member failures handled, claims never
    reported, services degraded and stopped, reservations held and timed out: the
    exact re-runs cover them, not only an easy path."""
    recorded, before = read_log(demo_store)
    assert [c.status for c in recorded.node_changes] == ["down", "up", "down", "up"]
    kinds = {d.kind for d in decisions(before)}
    assert {"MemberFailed", "MemberRestarted", "GroupRestarted", "MemberReleased"} <= kinds
    assert any("never reported" in text for text in recorded.assumptions)
    assert recorded.session_interval_ns == 10 * 10**9
    kinds = {d.kind for d in decisions(read_log(sim_store)[1])}
    assert {"GroupDegraded", "GroupRecovered", "MemberStopped"} <= kinds
    kinds = {d.kind for d in decisions(read_log(reserve_store)[1])}
    assert {"ReservationOpened", "MemberHeld", "ReservationTimedOut", "PlacementReleased"} <= kinds


def _claim_delays_plus(recorded_member: RecordedMember, ns: int) -> RecordedMember:
    claims = tuple(
        {
            name: ClaimOutcome(None if o.delay_ns is None else o.delay_ns + ns, o.failed)
            for name, o in placement.items()
        }
        for placement in recorded_member.claims
    )
    return msgspec.structs.replace(recorded_member, claims=claims)


def test_a_changed_input_is_caught_as_a_named_divergence(demo_store: Path) -> None:
    """The comparison can fail: every claim 1 s later, and the first decision that
    waits on a claim moves, named with its group and time."""
    recorded, before = read_log(demo_store)
    later = [
        msgspec.structs.replace(
            a, recorded={m: _claim_delays_plus(r, 10**9) for m, r in a.recorded.items()}
        )
        for a in recorded.arrivals
    ]
    after = rerun(msgspec.structs.replace(recorded, arrivals=later), load_cluster(DEMO_CLUSTER))
    compared = compare(before, after)
    divergence = compared.divergence
    assert divergence is not None and divergence.recorded is not None
    assert divergence.recorded.group == "grpo-000"
    assert compared.differing > 0


def test_a_shifted_session_grid_is_caught(demo_store: Path) -> None:
    """Sessions 1 s off the recorded grid: the first placement moves with them."""
    recorded, before = read_log(demo_store)
    shifted = msgspec.structs.replace(recorded, start_ns=recorded.start_ns + 10**9)
    compared = compare(before, rerun(shifted, load_cluster(DEMO_CLUSTER)))
    divergence = compared.divergence
    assert divergence is not None and divergence.index == 0
    assert divergence.recorded is not None and divergence.whatif is not None
    assert divergence.whatif.at_ns == divergence.recorded.at_ns + 10**9


def test_the_fallback_for_unrecorded_placements_is_the_median_recorded_delay(
    demo_store: Path,
) -> None:
    recorded, _ = read_log(demo_store)
    first = recorded.arrivals[0]
    trainer = first.behaviour_of("trainer")
    delays = [
        o.delay_ns
        for p in first.recorded["trainer"].claims
        for o in p.values()
        if o.delay_ns is not None
    ]
    assert isinstance(trainer.claim_delay, Const) and delays
    assert trainer.claim_delay.mean_ns() == int(statistics.median(delays))


def test_the_scenario_cluster_is_the_default_one() -> None:
    """The demo's cluster is the global --cluster's default: the command needs no flag."""
    assert load_scenario(SCENARIO).cluster == load_cluster(DEMO_CLUSTER)


SWEEP = [
    (scenario, policy, seed)
    for scenario in ("rl-post-training", "deadlock-trap", "disaggregated-serving", "mixed")
    for policy in ("atomic", "reserve", "reserve-backfill", "plan-ahead")
    for seed in (2, 3)
]
COVERED: dict[str, int] = {}


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "policy", "seed"), SWEEP)
def test_every_scenario_policy_and_seed_is_reproduced(
    scenario: str, policy: str, seed: int
) -> None:
    """The exactness over every scenario of the comparison suite, each costart policy
    and two more seeds, in memory; prints how often each kind of decision was made
    again so far."""
    setup = draw_setup(load_scenario(ROOT / "scenarios" / f"sim-{scenario}.toml"), seed)
    _, engine = run_policy(setup, policy, sim_controller_factory())
    before = list(engine.controller.read_events())
    recorded = recorded_workload(engine.controller, "memory")
    a = decisions(before)
    divergence = first_divergence(a, decisions(rerun(recorded, setup.cluster)))
    assert divergence is None, f"{scenario} {policy} seed {seed}: {divergence}"
    for d in a:
        COVERED[d.kind] = COVERED.get(d.kind, 0) + 1
    print(f"decisions made again so far, by kind: {dict(sorted(COVERED.items()))}")
