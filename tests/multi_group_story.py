"""A multi-group story for the views, CLI and REST tests: every kind of event occurs.

``run_story`` drives a Controller and calls ``after_each()`` after every command, so a
test can catch views up incrementally (in many small batches) while the story runs.
"""

from __future__ import annotations

from collections.abc import Callable

from costart.controller import Controller
from costart.domain.decisions import HoldCapacity, PlaceMember, SetPendReason
from costart.domain.events import Assignment, PendReason
from tests.builders import HOST, USER, ManualClock, a_group, fail, full_placement, ready, start

SECOND_NS = 10**9


def trainer_and_rollout(name: str = "g1", owner: str = "alice"):
    return (
        a_group(name, owner)
        .with_member("trainer", gpu=8, tasks=2, claims=("gpus", "data"))
        .with_member("rollout", replicas=3, claims=("gpus",))
        .with_rule("restart-member", members=("rollout",), max_restarts=3)
        .build()
    )


def run_story(
    controller: Controller, clock: ManualClock, after_each: Callable[[], object] = lambda: None
) -> None:
    """g1 reserves, places, starts, loses a rollout and re-places it; g2 waits in the
    queue and is cancelled; g3 is submitted by bob and stays pending; spare nodes are
    drained, lost and brought back."""
    g1 = trainer_and_rollout("g1", "alice")
    g2 = a_group("g2", "alice").with_member("solo", gpu=4, tasks=1).build()
    g3 = a_group("g3", "bob").with_member("big", gpu=8, tasks=4).build()
    need = PendReason(
        cls="capacity",
        message="trainer: 2×{gpu:8} in one rack; best rack r2 has 1 free",
        member="trainer",
        need="2×{gpu:8}",
        best="r2: 1",
        queue_position=1,
    )

    def step(seconds: float, action: Callable[[], object]) -> None:
        clock.advance(seconds)
        action()
        after_each()

    step(1, lambda: controller.submit(g1))
    step(1, lambda: controller.submit(g2))
    step(0, lambda: controller.apply_decisions([SetPendReason(group="g1", reason=need)]))
    step(
        2,
        lambda: controller.apply_decisions(
            [HoldCapacity(group="g1", holds={"trainer": (Assignment(0, "r1-n001"),)})]
        ),
    )
    queue = PendReason(cls="queue", message="behind 1 reservation", queue_position=2)
    step(0, lambda: controller.apply_decisions([SetPendReason(group="g2", reason=queue)]))
    step(5, lambda: controller.apply_decisions([full_placement(g1)]))
    step(1, lambda: ready(controller, "g1/trainer", "gpus"))
    step(1, lambda: ready(controller, "g1/trainer", "data"))
    step(3, lambda: ready(controller, "g1/rollout", "gpus"))
    step(1, lambda: start(controller, "g1/trainer"))
    step(0, lambda: start(controller, "g1/rollout"))
    step(60, lambda: fail(controller, "g1/rollout", "error", exit_code=137))
    replaced = (Assignment(0, "r2-n001"),)  # the failed replica, placed again alone
    step(
        2,
        lambda: controller.apply_decisions(
            [PlaceMember(group="g1", member="rollout", assignments=replaced)]
        ),
    )
    step(1, lambda: ready(controller, "g1/rollout", "gpus"))
    step(1, lambda: start(controller, "g1/rollout"))
    step(10, lambda: controller.cancel("g2", actor=USER))
    step(1, lambda: controller.submit(g3))
    # The cluster's own stream: a spare node is drained, goes down and comes back.
    step(1, lambda: controller.set_node_status("spare-n001", "drained", actor=HOST))
    step(1, lambda: controller.set_node_status("spare-n001", "down", actor=HOST))
    step(1, lambda: controller.set_node_status("spare-n001", "up", actor=HOST))
    step(0, lambda: controller.set_node_status("spare-n002", "down", actor=HOST))
