"""Reservations: granted in one global order, never holding what a higher plan needs,
and the head completes once running work frees capacity (docs/design.md §3.4 #5)."""

from __future__ import annotations

from costart.domain.events import PendReasonChanged
from costart.placement import idle_held_gpu_seconds, idle_held_gpus
from costart.placement.accounting import IdleHeldMeter
from tests.builders import HOST, SECOND_NS, USER

from .builders import Rig, a_cluster, a_group


def _trap(rig: Rig, gangs: int, tasks: int) -> list[str]:
    names = [f"gang{i}" for i in range(gangs)]
    for name in names:
        rig.submit(a_group(name).reserve(timeout="1h").with_member("w", gpu=8, tasks=tasks).build())
    return names


def test_the_deadlock_trap_makes_progress_one_gang_after_another() -> None:
    # 8 nodes; a small job runs on 5 of them. Three gangs of 6 nodes each: a naive
    # hold-as-you-go scheduler splits the 3 free nodes between them and deadlocks.
    rig = Rig(a_cluster(blocks=1, racks=2, nodes=4))
    rig.occupy(
        "running",
        {
            f"b0-r{r}-n{n}": 8
            for r in range(2)
            for n in range(4)
            if (r, n) not in ((1, 1), (1, 2), (1, 3))
        },
    )
    names = _trap(rig, 3, 6)
    rig.session()
    holds = {n: len(rig.nodes_of(n, "w")) for n in names}
    assert holds == {"gang0": 3, "gang1": 0, "gang2": 0}  # only the head holds
    rig.finish("running")
    started = []
    for _ in range(12):
        rig.session()
        for name in names:
            if rig.status(name) == "RUNNING" and name not in started:
                started.append(name)
                rig.finish(name)
    assert started == names


def test_a_lower_reservation_never_holds_what_the_head_plan_needs() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.occupy("running", {"b0-r0-n0": 8, "b0-r0-n1": 8, "b0-r0-n2": 4})
    rig.submit(a_group("head").reserve().with_member("w", gpu=8, tasks=4).build())
    rig.submit(a_group("next").reserve().with_member("w", gpu=4, tasks=2).build())
    rig.session()
    # n2 has 4 GPUs free, but the head's plan needs all of n2: "next" may not take them.
    assert rig.nodes_of("head", "w") == ["b0-r0-n3"]
    assert "b0-r0-n2" not in rig.nodes_of("next", "w")
    reason = rig.controller.group("next").pend_reason
    # Behind the head's reservation: class queue, naming the group ahead.
    assert reason is not None and reason.cls == "queue"
    assert (reason.queue_position, reason.ahead) == (1, ("head",))
    head = rig.controller.group("head").pend_reason
    assert head is not None and (head.cls, head.queue_position, head.ahead) == ("capacity", 0, ())


def test_a_higher_priority_reservation_displaces_lower_holds_it_cannot_do_without() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=4))
    rig.occupy("running", {"b0-r0-n0": 8, "b0-r0-n1": 8})
    rig.submit(a_group("low").reserve().with_member("w", gpu=8, tasks=3).build())
    rig.session()
    assert len(rig.nodes_of("low", "w")) == 2
    rig.submit(a_group("high").reserve().with_priority(10).with_member("w", gpu=8, tasks=4).build())
    rig.session()
    assert rig.status("low") == "PENDING" and rig.controller.group("low").last_reason is not None
    assert len(rig.nodes_of("high", "w")) == 2
    rig.finish("running")
    rig.session()
    assert rig.status("high") == "RUNNING"


def test_an_atomic_group_behind_a_reservation_pends_in_the_queue() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.occupy("running", {"b0-r0-n0": 8, "b0-r0-n1": 4})
    rig.submit(a_group("head").reserve().with_member("w", gpu=8, tasks=2).build())
    rig.submit(a_group("small").atomic().with_member("w", gpu=4, tasks=1).build())
    rig.session()
    # n1's 4 free GPUs are claimed by the head's plan: the small job must queue.
    assert rig.status("small") == "PENDING"
    reason = rig.controller.group("small").pend_reason
    assert reason is not None and reason.cls == "queue" and reason.queue_position == 1
    assert reason.ahead == ("head",)
    assert reason.message.startswith("behind 1 reservation (head) that need this capacity")


def test_a_reservation_times_out_releases_everything_and_backs_off() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.occupy("running", {"b0-r0-n0": 8})
    rig.submit(
        a_group("g").reserve(timeout="10s", backoff="30s").with_member("w", gpu=8, tasks=2).build()
    )
    rig.session()
    assert rig.status("g") == "RESERVING"
    rig.session(advance_s=11)
    group = rig.controller.group("g")
    assert group.status == "PENDING" and not rig.nodes_of("g", "w")
    assert group.pend_reason is not None and group.pend_reason.cls == "backoff"
    # The retry time is a fact of the reason, not clock text in its words.
    assert group.pend_reason.until_ns == group.retry_at_ns > 0
    assert group.pend_reason.message == "backing off (attempt 2) after: reservation timed out"


def test_holds_on_a_node_that_goes_down_are_released() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=2)
    rig = Rig(cluster)
    rig.occupy("running", {"b0-r0-n0": 8})
    rig.submit(a_group("g").reserve().with_member("w", gpu=8, tasks=2).build())
    rig.session()
    rig.controller.set_node_status("b0-r0-n1", "down", actor=HOST)
    rig.session()
    assert rig.status("g") == "PENDING"


def test_idle_held_gpus_are_accounted_while_a_reservation_waits() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.occupy("running", {"b0-r0-n0": 8})
    rig.submit(a_group("g").reserve().with_member("w", gpu=8, tasks=2).build())
    meter = IdleHeldMeter()
    rig.session()
    world = rig.controller.world
    opened = rig.clock.now_ns
    meter.observe(world, opened)
    assert idle_held_gpus(world) == 8
    rig.clock.advance(10)
    meter.observe(world, rig.clock.now_ns)
    assert meter.idle_held_gpu_ns == 8 * 10 * SECOND_NS
    assert idle_held_gpu_seconds(world, rig.clock.now_ns) == 80.0


def test_a_queue_shift_rewrites_only_the_reasons_near_its_head() -> None:
    # ADR 0116: six reservations on a full cluster, four groups queued behind them.
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=6))
    rig.occupy("running", {f"b0-r0-n{n}": 8 for n in range(6)})
    rig.submit(*(a_group(f"r{i}").reserve().with_member("w", gpu=8).build() for i in range(6)))
    rig.submit(*(a_group(f"p{i}").reserve().with_member("w", gpu=8).build() for i in range(4)))
    rig.session()
    assert [rig.status(f"r{i}") for i in range(6)] == ["RESERVING"] * 6
    first = {n: rig.controller.group(n).pend_reason for n in ("r2", "r5", "p1", "p3")}
    assert first["r2"] is not None and (first["r2"].queue_position, first["r2"].ahead) == (
        2,
        ("r0", "r1"),
    )
    for far in ("r5", "p1", "p3"):  # more than three ahead: neither counted nor named
        reason = first[far]
        assert reason is not None and reason.cls == "queue", reason
        assert (reason.queue_position, reason.ahead) == (None, ()), reason
        assert "behind more than 3 reservations" in reason.message
    rig.controller.cancel("r0", actor=USER)
    events = rig.session()
    restated = {
        rig.controller.world.group_by_id(e.group_id).name
        for e in events
        if isinstance(e, PendReasonChanged)
    }
    # r1..r4 move up within the counted three (r1 to the head), p0 takes r0's place as
    # a reservation; r5 (now 4 ahead) and the groups behind keep their reasons.
    assert rig.status("p0") == "RESERVING"
    assert restated == {"r1", "r2", "r3", "r4", "p0"}, restated
    for far in ("r5", "p1", "p3"):
        assert rig.controller.group(far).pend_reason == first[far]
    head = rig.controller.group("r1").pend_reason
    assert head is not None and head.cls == "capacity" and head.queue_position == 0
