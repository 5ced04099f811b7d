"""Every scenario also runs with the host's allocator: other work arriving and leaving
between sessions, binds another scheduler beats, and every invariant checked after
every step, overcommit counting the other work."""

from __future__ import annotations

import msgspec
import pytest

from costart.domain.capacity import Capacity
from costart.domain.world import World
from costart.sim.checks import StepChecker
from costart.sim.errors import SimError
from costart.sim.outside_load import with_outside_load
from costart.sim.results import POLICIES
from costart.sim.scenario import OutsideLoadDoc, load_scenario
from costart.sim.trace_setup import TraceOptions, trace_setup
from tests.sim.helpers import SCENARIOS, SIM_SCENARIOS, TRACES, run, setup_of, without_timeline


def _outside(name: str, seed: int = 1, race: float | None = None):  # type: ignore[no-untyped-def]
    doc = load_scenario(SCENARIOS / f"sim-{name}.toml").doc.outside_load
    if race is not None:
        doc = msgspec.structs.replace(doc, race=race)
    return with_outside_load(setup_of(name, seed), doc)


@pytest.mark.parametrize("scenario", SIM_SCENARIOS)
@pytest.mark.parametrize("policy", POLICIES)
def test_each_scenario_runs_with_other_work_and_every_invariant_checked(scenario, policy):
    result = run(_outside(scenario), policy)
    assert result.allocator == "outside-load"
    assert result.outside_work > 0
    assert result.invariant_checks > 0
    assert result.events_audited == result.log_events
    assert result.started + result.never_started + result.rejected == result.groups
    if policy != "independent":
        assert result.partial_starts == 0
        assert result.partial_start_waste_gpu_hours == 0
        assert result.deadlocked == 0


@pytest.mark.parametrize("scenario", ["mixed", "rl-post-training"])
def test_raced_binds_are_planned_again_with_every_invariant_kept(scenario):
    results = [run(_outside(scenario, race=0.05), policy) for policy in ("atomic", "reserve")]
    assert all(r.binds_raced > 0 and r.replans > 0 for r in results)
    assert all(r.replans == r.binds_raced and r.sessions_given_up == 0 for r in results)
    assert all(r.partial_starts == 0 and r.deadlocked == 0 for r in results)


def test_the_same_seed_gives_the_same_run_and_log_with_other_work():
    first = run(_outside("mixed", seed=4, race=0.05), "reserve")
    second = run(_outside("mixed", seed=4, race=0.05), "reserve")
    assert without_timeline(first) == without_timeline(second)
    assert first.binds_raced > 0


def test_other_work_moves_capacity_the_in_memory_run_does_not_see():
    plain = run(setup_of("mixed"), "reserve")
    hosted = run(_outside("mixed"), "reserve")
    assert plain.allocator == "in-memory" and plain.outside_work == 0
    assert hosted.log_sha256 != plain.log_sha256  # other work changed what costart did


def test_the_other_work_is_drawn_from_its_own_stream():
    """Adding other work changes none of the costart workload's draws."""
    setup = setup_of("mixed", 3)
    hosted = with_outside_load(setup, OutsideLoadDoc())
    assert hosted.workload == setup.workload and hosted.faults == setup.faults
    assert hosted.outside is not None and hosted.outside.arrivals
    assert all(w.gpus in (1, 2, 4, 8) for w in hosted.outside.arrivals)


def test_a_node_over_capacity_with_other_work_is_named():
    capacities = {"n1": Capacity(8, 64, 512), "n2": Capacity(8, 64, 512)}
    other = {"n1": Capacity(), "n2": Capacity(gpu=9)}
    checker = StepChecker(capacities, other.__getitem__)
    checker.node_touched("n1")
    checker.check_step(World())  # n1 is fine
    checker.node_touched("n2")
    with pytest.raises(SimError, match=r"#3 no overcommit: node n2: .* other work gpu 9"):
        checker.check_step(World())
    with pytest.raises(SimError, match="node n2"):
        checker.check_all(World())


def test_a_real_trace_runs_with_other_work_and_every_invariant_checked():
    setup = trace_setup("dlrm", TRACES, 1, TraceOptions(max_groups=20))
    result = run(with_outside_load(setup), "reserve")
    assert result.outside_work > 0 and result.invariant_checks > 0
    assert result.started == result.groups - result.rejected
    assert result.partial_starts == 0 and result.deadlocked == 0
