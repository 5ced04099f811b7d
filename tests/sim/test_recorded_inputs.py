"""The simulator's options for a recorded workload (ADRs 0131, 0132): a clock that
starts elsewhere, a first session held back, named node reports, recorded claim
outcomes, cancels and scale changes at their times."""

from __future__ import annotations

import msgspec

from costart.cli.sim_cmd import controller_factory
from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.sim.results import run_policy
from costart.sim.setup import NodeChange, SimSetup
from costart.sim.workload import ClaimOutcome, RecordedMember, ScaleChange
from tests.sim.helpers import setup_of

S = 10**9
# A controller time like a real one (2026), off the 10 s grid from 0: the grid moves with it.
EPOCH = 1_780_000_003 * S


def _events(setup: SimSetup, policy: str = "reserve") -> list[ev.DomainEvent]:
    _, engine = run_policy(setup, policy, controller_factory)
    return [e for _, e in engine.controller.read_events()]


def _shifted(setup: SimSetup, by: int) -> SimSetup:
    arrivals = [msgspec.structs.replace(a, at_ns=a.at_ns + by) for a in setup.workload.arrivals]
    faults = msgspec.structs.replace(
        setup.faults,
        node_losses=tuple(
            msgspec.structs.replace(f, at_ns=f.at_ns + by) for f in setup.faults.node_losses
        ),
        crashes=tuple(msgspec.structs.replace(c, at_ns=c.at_ns + by) for c in setup.faults.crashes),
    )
    return msgspec.structs.replace(
        setup,
        options=msgspec.structs.replace(setup.options, start_ns=by),
        workload=msgspec.structs.replace(setup.workload, arrivals=arrivals),
        faults=faults,
    )


def test_a_clock_started_later_runs_the_same_at_shifted_times() -> None:
    """Every time moved by the same span on the grid: the same events, each that much
    later (node losses and controller crashes included)."""
    setup = setup_of("rl-post-training")
    plain, shifted = _events(setup), _events(_shifted(setup, EPOCH))
    assert len(plain) == len(shifted) > 400
    assert [(e.at_ns, type(e)) for e in plain] == [(e.at_ns - EPOCH, type(e)) for e in shifted]


def test_the_first_session_is_held_back_to_the_time_given() -> None:
    """Unset, the first session comes one interval less 1 ns after the start; held
    back to 10 s, the first placement is at 10 s."""
    setup = setup_of("disaggregated-serving")
    first = next(e for e in _events(setup) if isinstance(e, ev.MemberPlaced))
    assert first.at_ns == 10 * S - 1
    held = msgspec.structs.replace(
        setup, options=msgspec.structs.replace(setup.options, first_session_ns=10 * S)
    )
    first = next(e for e in _events(held) if isinstance(e, ev.MemberPlaced))
    assert first.at_ns == 10 * S


def test_a_named_node_report_reaches_the_controller_at_its_time() -> None:
    setup = setup_of("rl-post-training")
    first = setup.workload.arrivals[0].at_ns
    who = Actor.host("the-host")
    changes = (
        NodeChange(first + 3600 * S, "h100-0001", "down", who),
        NodeChange(first + 4000 * S, "h100-0001", "up", who),
    )
    setup = msgspec.structs.replace(
        setup, faults=msgspec.structs.replace(setup.faults, node_losses=(), node_changes=changes)
    )
    reports = [e for e in _events(setup) if isinstance(e, ev.NodeStatusChanged)]
    assert [(e.at_ns, e.node, e.status, e.actor) for e in reports] == [
        (c.at_ns, c.node, c.status, c.actor) for c in changes
    ]


def test_a_claim_recorded_as_never_reported_holds_the_barrier_until_it_times_out() -> None:
    setup = setup_of("rl-post-training")
    arrival = setup.workload.arrivals[0]
    never = {
        m.name: RecordedMember(claims=({c: ClaimOutcome(None) for c in m.claims},))
        for m in arrival.spec.members
    }
    arrivals = [msgspec.structs.replace(arrival, recorded=never), *setup.workload.arrivals[1:]]
    setup = msgspec.structs.replace(
        setup, workload=msgspec.structs.replace(setup.workload, arrivals=arrivals)
    )
    events = _events(setup)
    placed = next(e for e in events if isinstance(e, ev.GroupPlaced))
    timed_out = next(e for e in events if isinstance(e, ev.BarrierTimedOut))
    assert placed.group_id == timed_out.group_id
    assert timed_out.at_ns >= placed.barrier_deadline_ns
    assert timed_out.at_ns < placed.barrier_deadline_ns + setup.options.session_interval_ns
    first_ready = [
        e for e in events if isinstance(e, ev.ClaimReady) and e.group_id == placed.group_id
    ]
    assert all(e.at_ns > timed_out.at_ns for e in first_ready)  # only the next placement's


def test_recorded_cancels_and_scale_changes_happen_at_their_times() -> None:
    setup = setup_of("rl-post-training")
    first, second = setup.workload.arrivals[:2]
    alice, admin = Actor.user(first.spec.owner), Actor.user("admin")
    first = msgspec.structs.replace(
        first, scales=(ScaleChange(first.at_ns + 1800 * S, "rollout", 10, alice),)
    )
    second = msgspec.structs.replace(second, cancel_at_ns=second.at_ns + 60 * S, cancelled_by=admin)
    arrivals = [first, second, *setup.workload.arrivals[2:]]
    setup = msgspec.structs.replace(
        setup, workload=msgspec.structs.replace(setup.workload, arrivals=arrivals)
    )
    events = _events(setup)
    scaled = [e for e in events if isinstance(e, ev.MemberScaled)]
    assert [(e.at_ns, e.replicas, e.actor) for e in scaled] == [(first.at_ns + 1800 * S, 10, alice)]
    cancelled = [e for e in events if isinstance(e, ev.GroupCancelled)]
    assert [(e.at_ns, e.actor) for e in cancelled] == [(second.at_ns + 60 * S, admin)]


def test_a_recorded_scale_the_controller_refuses_is_said_not_fatal() -> None:
    """Under other settings a recorded scale change may no longer be allowed: the
    re-run goes on and names it."""
    setup = setup_of("rl-post-training")
    first = setup.workload.arrivals[0]
    bad = ScaleChange(first.at_ns + 1800 * S, "rollout", 2, Actor.user(first.spec.owner))
    first = msgspec.structs.replace(first, scales=(bad,))
    setup = msgspec.structs.replace(
        setup,
        workload=msgspec.structs.replace(
            setup.workload, arrivals=[first, *setup.workload.arrivals[1:]]
        ),
    )
    _, engine = run_policy(setup, "reserve", controller_factory)
    assert engine.embedder.inputs_refused == [
        "grpo-000/rollout scaled to 2: replicas for rollout must be between min_running (4) "
        "and 4096 (got 2)"
    ]
    assert engine.end_reason == "quiescent"
