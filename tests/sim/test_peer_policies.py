"""The peers' policies in the simulator (`costart.sim.peers`): each runs every scenario
with every invariant checked, and shows the behaviour its ADR describes."""

from __future__ import annotations

import pytest

from costart.cli.sim_cmd import controller_factory
from costart.domain import events as ev
from costart.eventlog.event_reading import log_records
from costart.sim.peers.kueue import requeue_backoff_ns
from costart.sim.peers.pool import ANY, GpuPool, demand_of
from costart.sim.peers.yunikorn import YuniKornEmbedder
from costart.sim.results import PEER_POLICIES, run_policy
from tests.builders import a_group
from tests.sim.helpers import SIM_SCENARIOS, run, setup_of

SECOND_NS = 10**9


@pytest.mark.parametrize("scenario", SIM_SCENARIOS)
@pytest.mark.parametrize("policy", PEER_POLICIES)
def test_each_peer_policy_runs_every_scenario_with_every_invariant_checked(scenario, policy):
    result = run(setup_of(scenario), policy)
    assert result.policy == policy
    assert result.invariant_checks > 0
    assert result.events_audited == result.log_events
    assert result.started + result.never_started + result.rejected == result.groups


def by_workload(result, name):
    return next(w for w in result.workloads if w.workload == name)


def test_volcano_places_as_atomic_but_starts_pods_without_waiting_for_every_claim():
    setup = setup_of("rl-post-training")
    volcano, atomic = run(setup, "volcano"), run(setup, "atomic")
    assert atomic.partial_starts == 0
    # members whose volumes attach sooner run while their peers wait
    assert volcano.partial_starts > 0 and volcano.partial_start_waste_gpu_hours > 0
    trap = setup_of("deadlock-trap")
    assert run(trap, "volcano").time_to_start_p99_s == run(trap, "atomic").time_to_start_p99_s


def test_yunikorn_placeholders_of_competing_gangs_split_the_cluster_until_the_timeout():
    result = run(setup_of("deadlock-trap"), "yunikorn")
    assert result.deadlocked == 3  # Soft fallback after the timeout cannot undo the split
    assert result.idle_held_gpu_hours > 0


def test_yunikorn_starts_a_gang_whose_placeholders_are_all_allocated_at_once():
    result = run(setup_of("rl-post-training"), "yunikorn")
    assert result.never_started == 0
    assert result.partial_starts == 0 and result.partial_start_waste_gpu_hours == 0


def test_kueue_requeue_backoff_doubles_from_a_minute_to_an_hour():
    assert [requeue_backoff_ns(n) // SECOND_NS for n in (1, 2, 3, 6, 7, 30)] == [
        60,
        120,
        240,
        1920,
        3600,
        3600,
    ]


def test_kueue_admits_by_quota_and_evicts_a_workload_whose_pods_are_not_ready_in_time():
    trap, engine = run_policy(setup_of("deadlock-trap"), "kueue", controller_factory)
    assert trap.started == 3 and trap.deadlocked == 0  # quota admits one gang at a time
    result, engine = run_policy(setup_of("rl-post-training"), "kueue", controller_factory)
    embedder = engine.embedder
    assert sum(embedder.evictions.values()) >= 1
    evicted = [i for i in embedder.evictions]
    assert all(embedder.admissions[i] == embedder.evictions[i] + 1 for i in evicted)
    assert result.never_started == 0


def test_the_gate_pool_counts_gpus_per_type_and_in_total():
    pool = GpuPool({"H100": 16, "L40S": 8})
    h100 = demand_of(a_group().with_member("m", gpu=8, gpu_type="H100", tasks=2).build())
    untyped = demand_of(a_group().with_member("m", gpu=4, tasks=2).build())
    assert h100 == (("H100", 16),) and untyped == ((ANY, 8),)
    assert pool.fits(h100)
    pool.take(h100)
    assert not pool.fits((("H100", 1),))
    assert pool.fits(untyped)  # the L40S nodes are free
    pool.take(untyped)
    assert not pool.fits(((ANY, 1),))
    pool.give(h100)
    with pytest.raises(ValueError, match="more GPUs than were taken"):
        pool.give(h100)


def test_yunikorn_placeholder_timer_starts_at_the_first_allocation_and_lasts_15_minutes():
    # ADR 0093: yunikorn-core starts the timer when the first placeholder is allocated
    # (not at submission), and the shim's default placeholderTimeoutInSeconds is 900.
    _, engine = run_policy(setup_of("deadlock-trap"), "yunikorn", controller_factory)
    embedder = engine.embedder
    assert embedder.soft == {0, 1, 2}  # every gang fell back to Soft scheduling
    mapper = engine.controller.session.mapper
    events = [mapper.to_domain_event(r) for r in log_records(engine.controller.recorder)]
    first_start = min(e.at_ns for e in events if isinstance(e, ev.MemberStarted))
    first_allocation = min(embedder.first_allocated.values())
    assert first_allocation > 0  # allocated a session after arrival at t=0
    assert first_start == first_allocation + 900 * SECOND_NS


def test_yunikorn_tasks_reserve_a_node_when_they_do_not_fit():
    setup = setup_of("starvation")
    embedder = YuniKornEmbedder(setup)
    spec = setup.workload.arrivals[0].spec
    assert embedder.task_spec(spec, spec.members[0], 0).placement.mode == "reserve"
    # Node reservations let a gang's asks accumulate whole nodes while the stream of
    # small jobs goes around them: without them (independent) the gang starves.
    yunikorn, independent = run(setup, "yunikorn"), run(setup, "independent")
    gang_p99 = {
        r.policy: by_workload(r, "gang").time_to_start_p99_s for r in (yunikorn, independent)
    }
    assert gang_p99["yunikorn"] < 0.75 * gang_p99["independent"]
