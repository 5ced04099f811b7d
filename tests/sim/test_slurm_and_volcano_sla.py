"""Slurm's backfill per node from declared limits (ADR 0094) and Volcano's sla plugin
(ADR 0095), rule by rule."""

from __future__ import annotations

from types import SimpleNamespace

from costart.cli.sim_cmd import controller_factory
from costart.sim.peers.pool import ANY
from costart.sim.peers.slurm import (
    BF_MAX_JOB_TEST,
    BF_WINDOW_NS,
    UNLIMITED_NS,
    Reservation,
    SlurmEasyEmbedder,
)
from costart.sim.results import run_policy
from tests.sim.helpers import run, setup_of

HOUR = 3600 * 10**9


def _gate(scenario: str = "starvation-backfill", **options: int) -> SlurmEasyEmbedder:
    gate = SlurmEasyEmbedder(setup_of(scenario), **options)
    gate.engine = SimpleNamespace(now_ns=0)  # type: ignore[assignment]
    return gate


def test_a_job_limit_is_what_was_declared_else_the_partition_default_else_unlimited():
    declared = _gate("starvation-backfill")
    small = next(i for i, a in enumerate(declared.arrivals) if a.workload == "small")
    assert declared.limit_ns(small) == 4 * HOUR + HOUR // 2  # max_runtime = "4h30m"
    # the run-time distribution's maximum (4h) is never used: Slurm does not know it
    plain = _gate("starvation")
    assert plain.limit_ns(small) == UNLIMITED_NS
    assert _gate("starvation", default_time_ns=2 * HOUR).limit_ns(small) == 2 * HOUR


def test_the_gate_plans_per_node_not_in_aggregate():
    gate = _gate()
    free = dict.fromkeys(gate.capacity, 0)
    first, second = sorted(gate.capacity)[:2]
    free[first] = free[second] = 4  # 8 GPUs free, but on two nodes
    assert gate._fit([(8, ANY)], free) is None
    assert gate._fit([(4, ANY), (4, ANY)], free) == {first: 4, second: 4}


def test_backfill_reserves_for_many_jobs_and_a_later_one_goes_after_the_earlier():
    gate = _gate()
    assert gate.max_job_test == BF_MAX_JOB_TEST == 500 and BF_WINDOW_NS == 24 * HOUR
    nodes = sorted(n for n, gpus in gate.capacity.items() if gpus == 8)
    # every node busy: half of the 8-GPU nodes until 1h, every other node until 2h
    gate.running = {
        i: ((1 if i < len(nodes) // 2 else 2) * HOUR, {node: gate.capacity[node]})
        for i, node in enumerate([*nodes, *(n for n in gate.capacity if n not in nodes)])
    }
    profile = gate._profile()
    whole_half = [(8, ANY)] * (len(nodes) // 2)
    first = gate._earliest(whole_half, 3 * HOUR, profile, [])
    assert first is not None and first.start_ns == HOUR
    # the second job of the same size must not overlap the first's reservation: it is
    # reserved at 2h, on the other half
    second = gate._earliest(whole_half, 3 * HOUR, profile, [first])
    assert second is not None and second.start_ns == 2 * HOUR
    assert not set(first.nodes) & set(second.nodes)
    # a job that would start beyond bf_window gets no reservation
    gate.running = {0: (BF_WINDOW_NS + HOUR, dict(gate.capacity))}
    assert gate._earliest([(8, ANY)], HOUR, gate._profile(), []) is None
    assert isinstance(first, Reservation)


def test_without_declared_limits_slurm_cannot_plan_and_the_gangs_starve_as_under_atomic():
    setup = setup_of("starvation")
    slurm, atomic = run(setup, "slurm-easy"), run(setup, "atomic")
    gang = {r.policy: next(w for w in r.workloads if w.workload == "gang") for r in (slurm, atomic)}
    assert gang["slurm-easy"].time_to_start_p99_s == gang["atomic"].time_to_start_p99_s


def test_volcano_sla_reserves_for_a_job_past_its_waiting_time():
    setup = setup_of("starvation")
    sla, engine = run_policy(setup, "volcano-sla", controller_factory)
    plain = run(setup, "volcano")
    assert engine.embedder.overdue == 3  # the three gangs waited past an hour
    gang = {r.policy: next(w for w in r.workloads if w.workload == "gang") for r in (sla, plain)}
    assert gang["volcano-sla"].time_to_start_p99_s < 0.6 * gang["volcano"].time_to_start_p99_s
    assert sla.idle_held_gpu_hours > plain.idle_held_gpu_hours  # it locks what frees
    assert sla.started == plain.started and sla.cancelled == plain.cancelled


def test_volcano_sla_changes_nothing_for_jobs_within_their_waiting_time():
    setup = setup_of("rl-post-training")
    sla, plain = run(setup, "volcano-sla"), run(setup, "volcano")
    assert sla.time_to_start_p99_s == plain.time_to_start_p99_s
    assert sla.idle_held_gpu_hours == plain.idle_held_gpu_hours


def test_peer_reservations_never_preempt_work_costart_may_stop():
    # Work declared preemptible may be stopped by costart's reservations (ADR 0092);
    # neither Volcano's sla lock nor a yunikorn node reservation stops anything.
    from tests.sim.test_backfill_quality import _short_setup

    for policy in ("volcano-sla", "yunikorn"):
        result = run(_short_setup(3), policy)
        assert result.preemptions == 0, policy
