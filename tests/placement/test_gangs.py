"""The co-placement step over a real Controller: whole gangs, topology, pend reasons."""

from __future__ import annotations

import pytest

from costart.domain.decisions import PlaceGroup
from costart.domain.errors import SpecError
from costart.domain.events import Assignment
from costart.domain.spec_types import Topology
from costart.placement import Cluster, Node
from tests.builders import HOST, USER, claim_fail, fail, ready

from .builders import Rig, a_cluster, a_group

RACK_PACK = {"level": "rack", "policy": "pack", "required": True}
BLOCK_PACK = {"level": "block", "policy": "pack", "required": True}


def test_a_gang_is_placed_whole_in_one_session_with_group_and_member_topology() -> None:
    rig = Rig(a_cluster(blocks=2, racks=2, nodes=4))
    rig.submit(
        a_group("rl")
        .with_topology(BLOCK_PACK)
        .with_member("trainer", gpu=8, tasks=4, topology=RACK_PACK)
        .with_member("rollout", gpu=2, replicas=8)
        .build()
    )
    rig.session()
    assert rig.status("rl") == "RUNNING"
    trainer, rollout = rig.nodes_of("rl", "trainer"), rig.nodes_of("rl", "rollout")
    assert len(trainer) == 4 and len({n.split("-n")[0] for n in trainer}) == 1  # one rack
    assert len({n.split("-")[0] for n in trainer + rollout}) == 1  # one block


def test_nothing_is_placed_when_one_member_does_not_fit_and_the_reason_has_numbers() -> None:
    rig = Rig(a_cluster(blocks=2, racks=1, nodes=3))
    rig.occupy("busy", {"b0-r0-n2": 3, "b1-r0-n0": 8, "b1-r0-n1": 3})
    rig.submit(
        a_group("rl")
        .atomic()
        .with_topology(BLOCK_PACK)
        .with_member("trainer", gpu=8, tasks=2)
        .with_member("rollout", gpu=1, replicas=8)
        .build()
    )
    rig.session()
    group = rig.controller.group("rl")
    assert group.status == "PENDING"
    assert all(not m.assignments and not m.held for m in rig.controller.members("rl"))
    reason = group.pend_reason
    assert reason is not None and reason.cls == "topology"  # b1 has room, split
    assert reason.member == "rollout"
    assert reason.need == "rollout: 8×{gpu:1} in one block"
    assert reason.best == "best block b0 has 5 free after trainer"


@pytest.mark.parametrize(("required", "status"), [(True, "PENDING"), (False, "RUNNING")])
def test_capacity_split_across_blocks_is_a_topology_reason_unless_preferred(
    required: bool, status: str
) -> None:
    rig = Rig(a_cluster(blocks=2, racks=1, nodes=3))
    rig.occupy("busy", {"b0-r0-n0": 8, "b1-r0-n0": 8})
    topology = {"level": "block", "policy": "pack", "required": required}
    rig.submit(a_group("big").atomic().with_member("w", gpu=8, tasks=3, topology=topology).build())
    rig.session()
    group = rig.controller.group("big")
    assert group.status == status
    if required:
        assert group.pend_reason is not None and group.pend_reason.cls == "topology"
        assert group.pend_reason.best == "best block b0 has 2 free"


def test_required_spread_puts_each_replica_in_its_own_rack() -> None:
    rig = Rig(a_cluster(blocks=1, racks=4, nodes=2))
    spread = {"level": "rack", "policy": "spread", "required": True}
    rig.submit(a_group("svc").with_member("web", gpu=1, replicas=4, topology=spread).build())
    rig.session()
    nodes = rig.nodes_of("svc", "web")
    assert len({n.split("-n")[0] for n in nodes}) == 4


def test_required_spread_with_more_replicas_than_racks_never_fits() -> None:
    rig = Rig(a_cluster(blocks=1, racks=2, nodes=2))
    spread = {"level": "rack", "policy": "spread", "required": True}
    with pytest.raises(SpecError) as caught:
        rig.submit(a_group("svc").with_member("web", gpu=1, replicas=3, topology=spread).build())
    assert caught.value.path == "members[0].topology"


def test_groups_naming_one_placement_group_are_co_placed_without_co_starting() -> None:
    pgs = {"train-block": Topology("block", "pack", True)}
    rig = Rig(a_cluster(blocks=3, racks=1, nodes=4), pgs)
    rig.occupy("filler", {"b0-r0-n0": 8})
    rig.submit(a_group("one").with_topology("train-block").with_member("w", gpu=8, tasks=1).build())
    rig.controller.apply_decisions([PlaceGroup("one", {"w": (Assignment(0, "b2-r0-n0"),)})])
    rig.submit(a_group("two").with_topology("train-block").with_member("w", gpu=8, tasks=2).build())
    rig.session()
    assert rig.status("two") == "RUNNING"
    assert {n.split("-")[0] for n in rig.nodes_of("two", "w")} == {"b2"}  # not best-fit b0


def test_a_full_placement_group_domain_blocks_the_next_user_with_a_topology_reason() -> None:
    pgs = {"pg": Topology("block", "pack", True)}
    rig = Rig(a_cluster(blocks=2, racks=1, nodes=2), pgs)
    rig.submit(a_group("one").with_topology("pg").with_member("w", gpu=8, tasks=2).build())
    rig.session()
    rig.submit(a_group("two").atomic().with_topology("pg").with_member("w", gpu=8, tasks=1).build())
    rig.session()
    reason = rig.controller.group("two").pend_reason
    assert reason is not None and reason.cls == "topology"
    assert "placement group pg is in b" in reason.message


@pytest.mark.parametrize(
    ("builder", "path"),
    [
        (a_group().with_member("w", gpu=16), "members[0].shape"),
        (a_group().with_member("w", gpu=1, gpu_type="B200"), "members[0].shape"),
        (
            a_group().with_member("ok", gpu=1).with_member("w", gpu=8, tasks=9, topology=RACK_PACK),
            "members[1].topology",
        ),
        (a_group().with_member("w", gpu=8, tasks=17), "members[0].tasks"),
        (a_group().with_member("w", gpu=8, replicas=17), "members[0].min_start"),
        (
            a_group()
            .with_topology(BLOCK_PACK)
            .with_member("a", gpu=8, tasks=6)
            .with_member("b", gpu=8, tasks=3),
            "placement.topology",
        ),
        (
            a_group().with_member("a", gpu=8, tasks=10).with_member("b", gpu=8, tasks=7),
            "members[1]",
        ),
        (a_group().with_topology("nope").with_member("a", gpu=1), "placement.topology"),
        (a_group().with_member("a", gpu=1, topology={"level": "zone"}), "members[0].topology"),
    ],
)
def test_a_group_that_can_never_fit_is_refused_at_submit_naming_the_member(
    builder: object, path: str
) -> None:
    rig = Rig(a_cluster(blocks=2, racks=2, nodes=4))  # 16 nodes × 8 GPUs, racks of 4
    with pytest.raises(SpecError) as caught:
        rig.submit(builder.build())  # type: ignore[attr-defined]
    assert caught.value.path == path
    assert rig.controller.groups() == []


def test_nodes_going_down_make_a_waiting_group_infeasible() -> None:
    cluster = a_cluster(blocks=1, racks=1, nodes=4)
    rig = Rig(cluster)
    rig.submit(a_group("big").atomic().with_member("w", gpu=8, tasks=4).build())
    rig.controller.set_node_status("b0-r0-n0", "down", actor=HOST)
    rig.session()
    reason = rig.controller.group("big").pend_reason
    assert reason is not None and reason.cls == "infeasible"
    assert reason.need == "w: 4×{gpu:8}"
    rig.controller.set_node_status("b0-r0-n0", "up", actor=HOST)
    rig.session()
    assert rig.status("big") == "RUNNING"


def test_a_placed_group_waits_for_claims_with_a_claims_reason() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.submit(a_group("g").with_member("w", gpu=8, tasks=1, claims=("gpus", "data")).build())
    rig.session()
    rig.session()
    group = rig.controller.group("g")
    assert group.status == "PLACED"
    assert group.pend_reason is not None and group.pend_reason.cls == "claims"
    assert group.pend_reason.message == "placed; waiting for claims: w/data, w/gpus"
    ready(rig.controller, "g/w", "gpus")
    ready(rig.controller, "g/w", "data")
    assert rig.status("g") == "RUNNING"


def test_a_released_group_backs_off_with_a_backoff_reason() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=2))
    rig.submit(a_group("g").with_member("w", gpu=8, tasks=1, claims=("gpus",)).build())
    rig.session()
    claim_fail(rig.controller, "g/w", "gpus", "driver")
    events = rig.session()
    group = rig.controller.group("g")
    assert group.status == "PENDING" and group.pend_reason is not None
    assert group.pend_reason.cls == "backoff"
    assert not [e for e in events if type(e).__name__ == "MemberPlaced"]
    rig.session(advance_s=61)
    assert rig.status("g") == "PLACED"


def test_an_unchanged_situation_writes_no_new_pend_reason() -> None:
    rig = Rig(a_cluster(blocks=1, racks=1, nodes=1))
    rig.submit(a_group("a").atomic().with_member("w", gpu=8, tasks=1).build())
    rig.submit(a_group("b").atomic().with_member("w", gpu=8, tasks=1).build())
    rig.session()
    assert rig.session() == []


def test_a_restarting_member_is_placed_alone_and_a_replica_set_scales_up_singly() -> None:
    rig = Rig(a_cluster(blocks=1, racks=2, nodes=2))
    rig.submit(
        a_group("g")
        .with_rule("restart-member", ("trainer",))
        .with_member("trainer", gpu=8, tasks=2, topology=RACK_PACK)
        .with_member("web", gpu=4, replicas=2)
        .build()
    )
    rig.session()
    rig.start_all("g")
    fail(rig.controller, "g/trainer", "error")
    rig.controller.scale("g/web", 3, actor=USER)
    events = rig.session()
    placed = [e for e in events if type(e).__name__ == "MemberPlaced"]
    assert len(placed) == 2  # trainer alone, one more web replica alone
    trainer = rig.nodes_of("g", "trainer")
    assert len(trainer) == 2 and len({n.split("-n")[0] for n in trainer}) == 1
    assert len(rig.nodes_of("g", "web")) == 3


def test_drained_nodes_take_nothing_new() -> None:
    cluster = Cluster(["rack"], [Node("a", ("r0",), gpu=8), Node("b", ("r0",), gpu=8)])
    rig = Rig(cluster)
    rig.controller.set_node_status("a", "drained", actor=HOST)
    rig.submit(a_group("g").with_member("w", gpu=8, tasks=1).build())
    rig.session()
    assert rig.nodes_of("g", "w") == ["b"]


def test_an_infeasible_reason_follows_its_placement_group_anchor_when_it_moves() -> None:
    # b0 and b2 have one node, b1 four. "two" needs 2 nodes in the placement group's
    # block: it fits nowhere while the group is anchored to b0, nor once it is in b2.
    pgs = {"pg": Topology("block", "pack", True)}
    nodes = [
        Node(f"{b}-n{n}", (b, "r0"), gpu=8, gpu_type="H100")
        for b, count in (("b0", 1), ("b1", 4), ("b2", 1))
        for n in range(count)
    ]
    rig = Rig(Cluster(["block", "rack"], nodes), pgs)
    for name, node in (("one", "b0-n0"), ("three", "b2-n0")):
        rig.submit(a_group(name).with_topology("pg").with_member("w", gpu=8, tasks=1).build())
        rig.controller.apply_decisions([PlaceGroup(name, {"w": (Assignment(0, node),)})])
        rig.start_all(name)
    rig.submit(a_group("two").atomic().with_topology("pg").with_member("w", gpu=8, tasks=2).build())
    rig.session()
    reason = rig.controller.group("two").pend_reason
    assert reason is not None and reason.cls == "infeasible"
    assert "placement group pg is in b0" in reason.message
    rig.finish("one")
    rig.session()
    reason = rig.controller.group("two").pend_reason
    assert reason is not None and reason.cls == "infeasible"
    assert "placement group pg is in b2" in reason.message
