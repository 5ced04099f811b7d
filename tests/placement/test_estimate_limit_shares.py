"""The expected start where the runtime history learned nothing like the work (ADR
0146): runs as the share of their declared limit that ended runs held (the key's, else
the owner's, else the cluster's), and gangs admitted before a planned start only where
the run the controller admits them on (their declared limit) ends in time. Every number
below is worked out by hand from the runs the rig ran."""

from __future__ import annotations

from costart.domain.decisions import PlaceGroup
from costart.domain.events import Assignment
from costart.domain.spec_types import GroupSpec
from costart.placement.shadow import estimate_starts
from costart.placement.shadow.limit_shares import EndedRun, LimitShares
from tests.builders import SECOND_NS, USER

from .builders import Rig, a_cluster, a_group

MINUTE_NS = 60 * SECOND_NS
HOUR_NS = 60 * MINUTE_NS
N0, N1 = "b0-r0-n0", "b0-r0-n1"


def _place(rig: Rig, spec: GroupSpec, node: str) -> int:
    """Place and start ``spec``'s member w (8 one-GPU tasks) on ``node``; when it
    started."""
    rig.submit(spec)
    rig.controller.apply_decisions(
        [PlaceGroup(spec.name, {"w": tuple(Assignment(i, node) for i in range(8))})]
    )
    rig.start_all(spec.name)
    started = rig.controller.members(spec.name)[0].started_at_ns
    assert started is not None
    return started


def _eight(name: str, owner: str = "alice", limit: str | None = None) -> GroupSpec:
    return a_group(name, owner).with_member("w", gpu=1, tasks=8, max_runtime=limit).build()


def _cancelled_after(rig: Rig, name: str, limit: str, minutes: int, owner: str = "alice") -> None:
    """A run declaring ``limit`` that its user cancels after ``minutes`` (a service's
    end): the history learns nothing of it, the World keeps when it started and ended."""
    _place(rig, _eight(name, owner, limit), N0)
    rig.clock.advance(minutes * 60)
    rig.controller.cancel(name, actor=USER)
    assert rig.status(name) == "CANCELLED"


def _wait_for_a_node(rig: Rig, name: str = "next") -> None:
    rig.submit(a_group(name, owner="bob").atomic().with_member("w", gpu=8, tasks=1).build())


def test_runs_cut_short_of_their_limits_give_the_share_a_running_run_holds():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    # svc: declared 4h, ended by its user after 1h, 2h and 3h (shares 1/4, 1/2, 3/4).
    for i, minutes in enumerate((60, 120, 180)):
        _cancelled_after(rig, f"svc-{i}", "4h", minutes)
    world = rig.controller.world
    assert world.runtime_history.keys == {}  # nothing succeeded: nothing learned
    began = _place(rig, _eight("svc-9", limit="8h"), N0)
    _wait_for_a_node(rig)
    now = rig.clock.now_ns
    ours = estimate_starts(rig.cluster, world, now)["next"]
    # svc-9's runs: the key's shares of its own 8h limit, 2h, 4h and 6h. One running run:
    # the median is the 2nd (4h), the 10th percentile the 1st (2h), the 90th the 3rd
    # (6h = 360m, on the grid of 32 minutes beyond 320: 384m).
    assert (ours.start_ns, ours.earliest_ns, ours.latest_ns, ours.basis) == (
        began + 4 * HOUR_NS,
        began + 2 * HOUR_NS,
        began + 384 * MINUTE_NS,
        "estimate",
    )
    # Slurm's model: the declared 8h, an interval of one point.
    slurm = estimate_starts(rig.cluster, world, now, runtimes="limits")["next"]
    assert (slurm.start_ns, slurm.earliest_ns, slurm.latest_ns) == (began + 8 * HOUR_NS,) * 3


def test_shares_come_from_the_key_else_the_owner_else_the_whole_cluster():
    hour = HOUR_NS
    shares = LimitShares(
        [
            EndedRun("alice train w", "alice", hour, 4 * hour),
            EndedRun("alice train w", "alice", 2 * hour, 4 * hour),
            EndedRun("alice train w", "alice", 9 * hour, 4 * hour),  # past its limit: 1
            EndedRun("alice eval w", "alice", 30 * MINUTE_NS, hour),
            EndedRun("carol serve w", "carol", 3 * hour, 3 * hour),
        ]
    )
    member = _eight("train-1", "alice", "2h").members[0]
    # The key's three shares (1/4, 1/2, 1) of a 2h limit.
    assert shares.samples(_eight("train-1", "alice", "2h"), member) == (
        ("share-key", "alice train w", str(2 * hour)),
        [30 * MINUTE_NS, hour, 2 * hour],
    )
    # A key never seen: the owner's four (1/4, 1/2, 1, 1/2) of a 4h limit.
    other = _eight("other-1", "alice", "4h")
    assert shares.samples(other, other.members[0]) == (
        ("share-owner", "alice", str(4 * hour)),
        [hour, 2 * hour, 4 * hour, 2 * hour],
    )
    # An owner with fewer than three: the whole cluster's five, in integers (1h of 3h).
    bob = _eight("x-1", "bob", "90m")
    scope, runs = shares.samples(bob, bob.members[0]) or ((), [])
    assert scope == ("share-all", str(90 * MINUTE_NS))
    assert runs == [
        22 * MINUTE_NS + 30 * SECOND_NS,
        45 * MINUTE_NS,
        90 * MINUTE_NS,
        45 * MINUTE_NS,
        90 * MINUTE_NS,
    ]
    # No limit: nothing to take a share of.
    unlimited = _eight("train-2", "alice")
    assert shares.samples(unlimited, unlimited.members[0]) is None
    # Two shares anywhere are too few (as two learned runs are).
    two = LimitShares([EndedRun("alice other w", "alice", 1, 2), EndedRun("bob x w", "bob", 1, 2)])
    assert two.samples(other, other.members[0]) is None


def test_only_ended_runs_that_started_and_declared_a_limit_are_shares():
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    _cancelled_after(rig, "svc-0", "4h", 60)  # counted: 1h of 4h
    _place(rig, _eight("svc-1", limit="4h"), N1)  # still running: not a share
    rig.submit(_eight("svc-2", limit="4h"))  # cancelled before it ever started
    rig.controller.cancel("svc-2", actor=USER)
    _place(rig, _eight("plain-0"), N0)  # ended, but declared no limit
    rig.clock.advance(30 * 60)
    rig.finish("plain-0")
    assert rig.status("plain-0") == "SUCCEEDED"
    shares = LimitShares.of(rig.controller.world)
    assert shares.runs(("share-all",)) == [EndedRun("alice svc w", "alice", HOUR_NS, 4 * HOUR_NS)]


def test_a_gang_starts_before_a_planned_start_only_if_its_limit_ends_in_time():
    """The controller lends a planned gang's capacity only to work whose declared limit
    ends before the planned start (`ShadowSession.admits`); the estimate plans the same,
    though the work's learned run would end in time."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    began = _two_nodes_train_running(rig, "1h")
    # Ahead in the queue, both nodes for 2h (its runs: the cluster's shares, 1/6 of 2h:
    # 20m); then small-9, one node, learned 10m, declared 1h.
    rig.submit(a_group("big", "carol").with_member("w", gpu=8, tasks=2, max_runtime="2h").build())
    rig.submit(a_group("small-9", "bob").with_member("w", gpu=8, tasks=1, max_runtime="1h").build())
    world, now = rig.controller.world, rig.clock.now_ns
    big = estimate_starts(rig.cluster, world, now)["big"]
    small = estimate_starts(rig.cluster, world, now)["small-9"]
    # big starts when train-9 ends: 30m (10m, 52m at the 10th and 90th percentile).
    assert (big.start_ns, big.earliest_ns, big.latest_ns) == (
        began + 30 * MINUTE_NS,
        began + 10 * MINUTE_NS,
        began + 52 * MINUTE_NS,
    )
    # small-9 would fit on the free node now for its 10m, but its 1h limit runs into
    # big's start at every level: it starts when big ends (30 + 20m; 10 + 20m; 52 + 20m).
    assert (small.start_ns, small.earliest_ns, small.latest_ns) == (
        began + 50 * MINUTE_NS,
        began + 30 * MINUTE_NS,
        began + 72 * MINUTE_NS,
    )


def _two_nodes_train_running(rig: Rig, small_limit: str) -> int:
    """alice's train learned 10-50m (median 30m, 80th percentile 40m) and bob's small
    three 10m runs declaring ``small_limit``; train-9 runs on n0; returns its start."""
    for i, minutes in enumerate((10, 20, 30, 40, 50)):
        _place(rig, _eight(f"train-{i}"), N0)
        rig.clock.advance(minutes * 60)
        rig.finish(f"train-{i}")
    for i in range(3):
        _place(rig, _eight(f"small-{i}", "bob", small_limit), N1)
        rig.clock.advance(10 * 60)
        rig.finish(f"small-{i}")
    return _place(rig, _eight("train-9"), N0)


def test_lower_work_may_end_before_the_controllers_planned_start_not_the_likely_one():
    """The controller admits lower work whose limit ends before the start *it* planned
    (over limits and 80th percentiles, recorded in the pend reason): the estimate keeps
    lower work off a gang's capacity only from then, though it expects the gang earlier."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    began = _two_nodes_train_running(rig, "35m")
    big = a_group("big", "carol").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
    rig.submit(big.with_member("w", gpu=8, tasks=2, max_runtime="2h").build())
    rig.session()  # the controller plans big at train-9's 80th percentile end: 40m
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.planned_start_ns == began + 40 * MINUTE_NS
    rig.submit(_eight("small-9", "bob", "35m"))  # learned 10m, declared 35m
    world, now = rig.controller.world, rig.clock.now_ns
    estimates = estimate_starts(rig.cluster, world, now)
    # big is expected when train-9 ends at its median: 30m after it began (the time
    # left, 29m59s, on the grid of 2 minutes).
    assert estimates["big"].start_ns == now + 30 * MINUTE_NS
    # small-9's 35m limit ends before the controller's 40m: admitted now, as the
    # controller will admit it; at every level (big's capacity is kept from 40m on).
    small = estimates["small-9"]
    assert (small.start_ns, small.earliest_ns, small.latest_ns, small.basis) == (
        now,
        now,
        now,
        "now",
    )


def test_preemptible_work_is_admitted_before_a_planned_start_whatever_its_limit():
    """The controller lends to work that is all preemptible whatever its run and takes
    it back when the gang fits: only its likely run (10m) must end before big's start."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    began = _two_nodes_train_running(rig, "1h")
    rig.submit(a_group("big", "carol").with_member("w", gpu=8, tasks=2, max_runtime="2h").build())
    preemptible = a_group("small-9", "bob").with_member(
        "w", gpu=8, tasks=1, max_runtime="1h", preemptible=True
    )
    rig.submit(preemptible.build())
    small = estimate_starts(rig.cluster, rig.controller.world, rig.clock.now_ns)["small-9"]
    assert (small.start_ns, small.earliest_ns, small.latest_ns) == (began, began, began)


def test_a_reservation_keeps_lower_work_off_its_plan_from_its_likely_start():
    """A reservation lends to no limited work (it holds what frees): the capacity its
    plan gives it is kept from lower work from its likely start on, however late the
    controller planned it."""
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    began = _two_nodes_train_running(rig, "1h")
    big = a_group("big", "carol").with_placement(mode="plan-ahead", timeout="8h", backoff="1m")
    rig.submit(big.with_member("w", gpu=8, tasks=2, max_runtime="2h").build())
    rig.submit(_eight("small-9", "bob", "1h"))
    # Nothing lower ends by big's planned start (small-9's 1h limit does not), and
    # small-9 would take n1: big reserves, holding n1, with its planned start (40m).
    rig.session()
    group = rig.controller.group("big")
    assert group.status == "RESERVING" and rig.nodes_of("big", "w") == [N1]
    assert group.pend_reason is not None
    assert group.pend_reason.planned_start_ns == began + 40 * MINUTE_NS
    rig.submit(_eight("quick-1", "dave", "5m"))  # 5m declared: it would fit 30m-40m
    world, now = rig.controller.world, rig.clock.now_ns
    estimates = estimate_starts(rig.cluster, world, now)
    # big at train-9's median end (30m), for 2h x 1/6 (the cluster's shares) = 20m;
    # small-9 and quick-1 both after it ends, one on each node.
    assert estimates["big"].start_ns == now + 30 * MINUTE_NS
    assert estimates["small-9"].start_ns == now + 50 * MINUTE_NS
    assert estimates["quick-1"].start_ns == now + 50 * MINUTE_NS
