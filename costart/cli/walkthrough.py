"""`costart demo`: the RL post-training scenario driven step by step by hand.

Placement here is hand-made (a fixed rack layout); the point is to show the barrier and
the failure policy: nothing may start until every member is placed and every claim is
READY, and a rollout crash restarts only the rollout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from rich.console import Console

from costart import display
from costart.adapters.stand_in import CLAIM_DRIVER, agent_of_task, start_placed_tasks
from costart.bootstrap import Settings, bootstrap
from costart.cli.group_tables import members_table
from costart.controller import Controller
from costart.domain.decisions import PlaceGroup, PlaceMember
from costart.domain.events import Assignment
from costart.domain.spec import parse_spec
from costart.domain.spec_types import GroupSpec

SECOND_NS = 10**9


class StepClock:
    """A virtual clock the demo advances by hand (deterministic output)."""

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, seconds: int) -> None:
        self.now_ns += seconds * SECOND_NS


def hand_made_placement(spec: GroupSpec) -> dict[str, tuple[Assignment, ...]]:
    """Every task on its own node of rack r1 of block b1, in spec order."""
    placed: dict[str, tuple[Assignment, ...]] = {}
    node = 0
    for member in spec.members:
        tasks = []
        for index in range(member.count):
            node += 1
            tasks.append(Assignment(index=index, node=f"b1-r1-n{node:02d}"))
        placed[member.name] = tuple(tasks)
    return placed


def run_demo(
    spec_path: Path,
    console: Console,
    settings: Settings | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> Controller:
    """Drive the scenario; print the group after each step. Returns the controller. The
    placement is made by hand here, so the controller has no placement step. ``env``
    replaces the environment the settings give (a test's store of its own)."""
    spec = parse_spec(spec_path.read_bytes(), "toml")
    clock = StepClock()
    controller = bootstrap(settings or Settings(cluster=None), clock=clock, placement=None, env=env)
    name = spec.name

    def step(title: str, action: Callable[[], object], seconds: int = 5) -> None:
        clock.advance(seconds)
        action()
        console.rule(f"[bold]{display.clock(clock.now_ns)}[/bold]  {title}")
        console.print(members_table(controller.group(name), controller.members(name), clock.now_ns))

    step("submit the group", lambda: controller.submit(spec))
    step(
        "place every member at once",
        lambda: controller.apply_decisions(
            [PlaceGroup(group=name, assignments=hand_made_placement(spec))]
        ),
    )
    console.print(
        f"may_start(trainer) = {controller.may_start(f'{name}/trainer')}  (claims pending)"
    )
    for member in spec.members:
        for claim in member.claims:
            ref = f"{name}/{member.name}"
            ready = partial(controller.claim_ready, ref, claim, 1, actor=CLAIM_DRIVER)
            step(f"claim {ref} {claim} READY", ready, 1)
    console.print(
        f"may_start(trainer) = {controller.may_start(f'{name}/trainer')}  (barrier released)"
    )
    step(
        "each node's agent starts the tasks placed on it",
        lambda: [start_placed_tasks(controller, f"{name}/{m.name}") for m in spec.members],
    )
    step(
        "rollout replica 0 crashes (error): its rule says restart-member",
        lambda: controller.task_failed(
            f"{name}/rollout",
            0,
            1,
            "error",
            exit_code=137,
            actor=agent_of_task(controller, f"{name}/rollout", 0),
        ),
        60,
    )
    step(
        "the replica is re-placed alone (no gang)",
        lambda: controller.apply_decisions(
            [
                PlaceMember(
                    group=name,
                    member="rollout",
                    assignments=(Assignment(index=0, node="b1-r2-n01"),),
                )
            ]
        ),
    )
    step("and its agent starts it", lambda: start_placed_tasks(controller, f"{name}/rollout"), 2)
    trainer = f"{name}/trainer"
    for task in range(spec.member("trainer").count):
        step(
            f"trainer task {task} exits 0"
            + (": success policy all-jobs stops the services" if task else ""),
            partial(
                controller.task_succeeded,
                trainer,
                task,
                1,
                actor=agent_of_task(controller, trainer, task),
            ),
            3600 if task == 0 else 1,
        )
    position = controller.recorder.max_notification_id()
    console.print(
        f"[bold]{position}[/bold] events in the log; group {controller.group(name).status}"
    )
    return controller
