"""The recorded workload read out of logs whose inputs are known: a simulated run's
drawn arrivals, claim delays, run ends and node losses come back exactly, and what the
log cannot know is stated as an assumption, not invented (ADR 0131)."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from costart.bootstrap import Settings
from costart.cli.sim_cmd import controller_factory
from costart.cli.walkthrough import run_demo
from costart.display import duration
from costart.domain import events as ev
from costart.domain.actors import Actor
from costart.domain.ids import id_text
from costart.replay.whatif.extract import as_json, recorded_workload
from costart.replay.whatif.workload import RecordedWorkload
from costart.sim.embedder import Embedder
from costart.sim.metrics import Original
from costart.sim.results import run_policy
from costart.sim.scenario import load_scenario
from costart.sim.setup import SimSetup, draw_setup, keyed_random
from tests.replay.whatif_helpers import Events, read_log

ROOT = Path(__file__).resolve().parents[2]


def _run(scenario: str, seed: int) -> tuple[SimSetup, Events, RecordedWorkload]:
    setup = draw_setup(load_scenario(ROOT / "scenarios" / f"sim-{scenario}.toml"), seed)
    _, engine = run_policy(setup, "as-specified", controller_factory)
    events = list(engine.controller.read_events())
    return setup, events, recorded_workload(engine.controller, "memory")


@pytest.fixture(scope="module", params=[("rl-post-training", 1), ("mixed", 1)])
def known(request: pytest.FixtureRequest) -> tuple[SimSetup, Events, RecordedWorkload]:
    scenario, seed = request.param
    return _run(scenario, seed)


def test_arrivals_come_back_exactly(known: tuple[SimSetup, Events, RecordedWorkload]) -> None:
    setup, _, recorded = known
    drawn = [(a.at_ns, a.spec) for a in setup.workload.arrivals]
    assert [(a.at_ns, a.spec) for a in recorded.arrivals] == drawn
    assert all(a.submitter == Actor.user(a.spec.owner) for a in recorded.arrivals)


def test_claim_delays_are_the_drawn_ones(known: tuple[SimSetup, Events, RecordedWorkload]) -> None:
    """Every recorded claim outcome is the simulator's draw for that member, claim and
    placement (its keyed stream); a claim never reported is recorded as unknown."""
    setup, _, recorded = known
    seed = setup.options.seed
    checked = unknown = 0
    for drawn, arrival in zip(setup.workload.arrivals, recorded.arrivals, strict=True):
        for member, history in arrival.recorded.items():
            behaviour = drawn.behaviour_of(member)
            for gen, outcomes in enumerate(history.claims, 1):
                for claim, outcome in outcomes.items():
                    rng = keyed_random(seed, "claim", drawn.spec.name, member, 0, claim, gen)
                    delay = behaviour.claim_delay.draw_ns(rng)
                    fail = behaviour.claim_fail > 0 and rng.random() < behaviour.claim_fail
                    if outcome.delay_ns is None:
                        unknown += 1
                        continue
                    assert (outcome.delay_ns, outcome.failed) == (delay, fail), (
                        f"{drawn.spec.name}/{member} {claim} placement {gen}"
                    )
                    checked += 1
    print(f"claim outcomes checked {checked}, never reported {unknown}")
    assert checked >= 20


def test_run_ends_are_the_drawn_ones(known: tuple[SimSetup, Events, RecordedWorkload]) -> None:
    """Every run end the log has is the simulator's draw for that start (success after
    the run time, or the crash time and reason); the rest are marked assumed."""
    setup, _, recorded = known
    embedder = Embedder(setup, None)
    checked = assumed = 0
    for index, (drawn, arrival) in enumerate(
        zip(setup.workload.arrivals, recorded.arrivals, strict=True)
    ):
        original = Original(index, drawn.spec.name, drawn.at_ns)
        for member, history in arrival.recorded.items():
            for start, run in enumerate(history.runs, 1):
                if run.assumed or run.after_ns is None:
                    assumed += 1
                    continue
                assert (run.after_ns, run.reason) == embedder.draw_run(original, member, start)
                checked += 1
    print(f"run ends checked {checked}, assumed or open {assumed}")
    assert checked >= 10


def test_node_losses_come_back_at_their_times(
    known: tuple[SimSetup, Events, RecordedWorkload],
) -> None:
    setup, _, recorded = known
    times = sorted(
        t for loss in setup.faults.node_losses for t in (loss.at_ns, loss.at_ns + loss.down_for_ns)
    )
    assert sorted(c.at_ns for c in recorded.node_changes) == times
    downs = [c for c in recorded.node_changes if c.status == "down"]
    assert len(downs) == len(setup.faults.node_losses)


def test_a_run_stopped_before_its_end_is_an_assumption_with_its_lower_bound() -> None:
    """The demo's grpo-000 trainer loses a node mid-run: its run is stopped at the
    loss, so the log knows only that it ran that long; the assumption says so, with
    that bound, and the run is marked assumed."""
    _, events, recorded = _run("rl-post-training", 1)
    names: dict[str, str] = {}
    started = lost = None
    for _, event in events:
        if isinstance(event, ev.GroupSubmitted):
            for spec, member_id in zip(event.spec.members, event.member_ids, strict=True):
                names[id_text(member_id)] = f"{event.spec.name}/{spec.name}"
        who = names.get(id_text(event.originator_id))
        if who == "grpo-000/trainer" and isinstance(event, ev.MemberStarted) and started is None:
            started = event.at_ns
        if who == "grpo-000/trainer" and isinstance(event, ev.MemberFailed) and lost is None:
            assert event.reason == "node-lost"
            lost = event.at_ns
    assert started is not None and lost is not None
    said = [t for t in recorded.assumptions if t.startswith("grpo-000/trainer: its 1st start")]
    assert len(said) == 1 and f"after {duration(lost - started)}," in said[0], said
    first = recorded.arrivals[0].recorded["trainer"].runs[0]
    assert first.assumed and first.after_ns is not None and first.after_ns > lost - started


def test_the_workload_is_plain_data(known: tuple[SimSetup, Events, RecordedWorkload]) -> None:
    _, _, recorded = known
    assert msgspec.json.decode(as_json(recorded), type=RecordedWorkload) == recorded
    assert recorded.session_interval_ns == 10 * 10**9


def test_a_hand_driven_log_says_what_the_simulator_cannot_replay(tmp_path: Path) -> None:
    """The walkthrough's agents start members seconds after the barrier, and its
    trainer's tasks end a second apart: the simulator starts at once and ends a run's
    tasks together, and the workload says so (with how much)."""
    store = tmp_path / "store"
    spec = ROOT / "scenarios" / "rl-post-training.toml"
    run_demo(spec, Console(file=io.StringIO()), Settings(store=str(store), cluster=None)).close()
    recorded, _ = read_log(store)
    assert (
        "4 starts came after the controller allowed them (up to 5.0s later): "
        "the re-run starts members at once"
    ) in recorded.assumptions
    assert any(
        t.startswith("the tasks of 1 job runs ended apart (up to 3.0s)")
        for t in recorded.assumptions
    )
