"""Table-driven placement cases on a zone/block/rack cluster: packing at each level,
spread, fragmentation, heterogeneous GPU types, infeasible groups, required vs
preferred. Each row is one situation and what the step must make of it."""

from __future__ import annotations

from typing import Any

import pytest

from costart.domain.errors import SpecError
from tests.builders import HOST

from .builders import GroupBuilder, Rig, a_group, a_zoned_cluster, domain_of


def pack(level: str, required: bool = True) -> dict[str, Any]:
    return {"level": level, "policy": "pack", "required": required}


def spread(level: str, required: bool = True) -> dict[str, Any]:
    return {"level": level, "policy": "spread", "required": required}


def domains(rig: Rig, group: str, member: str, level: str) -> list[str]:
    return sorted(domain_of(n, level) for n in rig.nodes_of(group, member))


def placed(rig: Rig, builder: GroupBuilder) -> Rig:
    rig.submit(builder.build())
    rig.session()
    return rig


# 2 zones × 2 blocks × 2 racks × 2 nodes of 8 GPUs: a rack has 16 GPUs, a block 32.
@pytest.mark.parametrize(
    ("level", "gpu", "tasks"),
    [("node", 1, 8), ("rack", 8, 2), ("rack", 4, 4), ("block", 8, 4), ("zone", 8, 8)],
)
def test_a_required_pack_puts_every_task_in_one_domain_of_its_level(
    level: str, gpu: int, tasks: int
) -> None:
    rig = placed(
        Rig(a_zoned_cluster()),
        a_group("g").with_member("w", gpu=gpu, tasks=tasks, topology=pack(level)),
    )
    assert rig.status("g") == "RUNNING"
    assert len(set(domains(rig, "g", "w", level))) == 1


@pytest.mark.parametrize(("level", "tasks"), [("node", 2), ("rack", 3), ("block", 5), ("zone", 9)])
def test_a_required_pack_larger_than_any_domain_is_refused_at_submit(
    level: str, tasks: int
) -> None:
    rig = Rig(a_zoned_cluster())
    with pytest.raises(SpecError) as caught:
        rig.submit(a_group("g").with_member("w", gpu=8, tasks=tasks, topology=pack(level)).build())
    assert caught.value.path == "members[0].topology"


@pytest.mark.parametrize(("level", "busy_first"), [("rack", "z0-b0-r0"), ("block", "z0-b0")])
def test_a_pack_avoids_a_domain_that_other_work_made_too_small(level: str, busy_first: str) -> None:
    rig = Rig(a_zoned_cluster())
    rig.occupy("busy", {f"{busy_first}-r0-n0" if level == "block" else f"{busy_first}-n0": 1})
    placed(
        rig,
        a_group("g").with_member(
            "w", gpu=8, tasks=2 if level == "rack" else 4, topology=pack(level)
        ),
    )
    assert rig.status("g") == "RUNNING"
    (only,) = set(domains(rig, "g", "w", level))
    assert only != busy_first


@pytest.mark.parametrize(
    ("level", "replicas", "expected_domains"),
    [("rack", 8, 8), ("block", 4, 4), ("zone", 2, 2), ("node", 16, 16)],
)
def test_a_required_spread_puts_one_task_per_domain(
    level: str, replicas: int, expected_domains: int
) -> None:
    rig = placed(
        Rig(a_zoned_cluster()),
        a_group("g").with_member("w", gpu=1, replicas=replicas, topology=spread(level)),
    )
    assert rig.status("g") == "RUNNING"
    assert len(set(domains(rig, "g", "w", level))) == expected_domains


@pytest.mark.parametrize(("level", "replicas"), [("zone", 6), ("block", 8), ("rack", 12)])
def test_a_preferred_spread_balances_across_domains(level: str, replicas: int) -> None:
    rig = placed(
        Rig(a_zoned_cluster()),
        a_group("g").with_member(
            "w", gpu=1, replicas=replicas, topology=spread(level, required=False)
        ),
    )
    assert rig.status("g") == "RUNNING"
    counts: dict[str, int] = {}
    for domain in domains(rig, "g", "w", level):
        counts[domain] = counts.get(domain, 0) + 1
    assert max(counts.values()) - min(counts.values()) <= 1


@pytest.mark.parametrize(("level", "replicas"), [("zone", 3), ("block", 5), ("rack", 9)])
def test_a_required_spread_wider_than_the_cluster_is_refused_at_submit(
    level: str, replicas: int
) -> None:
    rig = Rig(a_zoned_cluster())
    with pytest.raises(SpecError) as caught:
        rig.submit(
            a_group("g").with_member("w", gpu=1, replicas=replicas, topology=spread(level)).build()
        )
    assert caught.value.path == "members[0].topology"


# Fragmentation: free GPUs scattered so that no domain has enough for the pack, while
# the whole cluster has plenty: a topology reason that names the best domain.
@pytest.mark.parametrize(
    ("level", "free_per_node", "gpu", "tasks", "best"),
    [
        ("rack", 3, 1, 8, "best rack z0/b0/r0 has 6 free"),
        ("block", 3, 1, 16, "best block z0/b0 has 12 free"),
        ("zone", 2, 2, 10, "best zone z0 has 8 free"),
        ("node", 4, 2, 3, "best node z0/b0/r0/z0-b0-r0-n0 has 2 free"),
    ],
)
def test_scattered_free_gpus_that_no_domain_can_pack_give_a_topology_reason(
    level: str, free_per_node: int, gpu: int, tasks: int, best: str
) -> None:
    rig = Rig(a_zoned_cluster())
    rig.occupy("busy", {n.name: 8 - free_per_node for n in rig.cluster.nodes})
    total_free = free_per_node * len(rig.cluster)
    assert gpu * tasks <= total_free  # the cluster as a whole has room
    placed(rig, a_group("g").atomic().with_member("w", gpu=gpu, tasks=tasks, topology=pack(level)))
    group = rig.controller.group("g")
    assert group.status == "PENDING"
    assert group.pend_reason is not None and group.pend_reason.cls == "topology"
    assert group.pend_reason.best == best


@pytest.mark.parametrize("required", [True, False])
def test_fragmented_capacity_is_used_split_only_when_the_pack_is_preferred(required: bool) -> None:
    rig = Rig(a_zoned_cluster())
    rig.occupy("busy", {n.name: 5 for n in rig.cluster.nodes})  # 3 free per node
    placed(
        rig, a_group("g").atomic().with_member("w", gpu=1, tasks=8, topology=pack("rack", required))
    )
    assert rig.status("g") == ("PENDING" if required else "RUNNING")
    if not required:
        assert len(set(domains(rig, "g", "w", "rack"))) == 2  # 6 + 2 over two racks


# Heterogeneous GPU types: zone z0 is H100, zone z1 is A100.
MIXED = ("H100", "A100")


@pytest.mark.parametrize(("gpu_type", "zone"), [("H100", "z0"), ("A100", "z1")])
def test_a_gpu_type_lands_only_on_nodes_of_that_type(gpu_type: str, zone: str) -> None:
    rig = placed(
        Rig(a_zoned_cluster(gpu_types=MIXED)),
        a_group("g").with_member("w", gpu=8, tasks=6, gpu_type=gpu_type),
    )
    assert rig.status("g") == "RUNNING"
    assert set(domains(rig, "g", "w", "zone")) == {zone}


def test_members_of_different_types_in_one_group_each_find_their_own_nodes() -> None:
    rig = placed(
        Rig(a_zoned_cluster(gpu_types=MIXED)),
        a_group("g")
        .with_member("trainer", gpu=8, tasks=4, gpu_type="H100", topology=pack("block"))
        .with_member("rollout", gpu=2, replicas=8, gpu_type="A100")
        .with_member("any", gpu=8, tasks=2),
    )
    assert rig.status("g") == "RUNNING"
    assert set(domains(rig, "g", "trainer", "zone")) == {"z0"}
    assert set(domains(rig, "g", "rollout", "zone")) == {"z1"}
    assert len(rig.nodes_of("g", "any")) == 2


def test_busy_nodes_of_the_asked_type_are_not_replaced_by_free_nodes_of_another() -> None:
    rig = Rig(a_zoned_cluster(gpu_types=MIXED))
    rig.occupy("busy", {n.name: 8 for n in rig.cluster.nodes if n.gpu_type == "A100"})
    placed(rig, a_group("g").atomic().with_member("w", gpu=8, tasks=1, gpu_type="A100"))
    group = rig.controller.group("g")
    assert group.status == "PENDING"
    assert group.pend_reason is not None and group.pend_reason.cls == "capacity"
    assert group.pend_reason.need == "w: 1×{gpu:8, type:A100}"


@pytest.mark.parametrize(
    ("builder", "path"),
    [
        (a_group().with_member("w", gpu=8, tasks=9, gpu_type="A100"), "members[0].tasks"),
        (a_group().with_member("w", gpu=1, gpu_type="B200"), "members[0].shape"),
        (
            a_group()
            .with_topology(pack("zone"))
            .with_member("a", gpu=8, gpu_type="H100")
            .with_member("b", gpu=8, gpu_type="A100"),
            "placement.topology",
        ),
    ],
)
def test_a_type_mix_the_cluster_cannot_hold_is_refused_at_submit(
    builder: GroupBuilder, path: str
) -> None:
    rig = Rig(a_zoned_cluster(gpu_types=MIXED))
    with pytest.raises(SpecError) as caught:
        rig.submit(builder.build())
    assert caught.value.path == path


# Infeasible once the cluster shrinks: down or drained nodes take nothing new.
@pytest.mark.parametrize("status", ["down", "drained"])
def test_a_group_becomes_infeasible_when_nodes_close_and_runs_when_they_return(status: str) -> None:
    rig = Rig(a_zoned_cluster(zones=1, blocks=1))  # 4 nodes
    rig.submit(a_group("g").atomic().with_member("w", gpu=8, tasks=4).build())
    rig.controller.set_node_status("z0-b0-r1-n1", status, actor=HOST)  # type: ignore[arg-type]
    rig.session()
    reason = rig.controller.group("g").pend_reason
    assert reason is not None and reason.cls == "infeasible"
    assert reason.message == "can never fit the cluster as it is now: w: 4×{gpu:8}; 3 fit"
    rig.controller.set_node_status("z0-b0-r1-n1", "up", actor=HOST)
    rig.session()
    assert rig.status("g") == "RUNNING"


def test_a_reservation_that_the_shrunken_cluster_cannot_hold_releases_its_holds() -> None:
    rig = Rig(a_zoned_cluster(zones=1, blocks=1))
    rig.occupy("busy", {"z0-b0-r1-n1": 8})
    rig.submit(a_group("g").reserve().with_member("w", gpu=8, tasks=4).build())
    rig.session()
    assert rig.status("g") == "RESERVING" and len(rig.nodes_of("g", "w")) == 3
    rig.controller.set_node_status("z0-b0-r1-n0", "drained", actor=HOST)
    rig.session()
    assert rig.status("g") == "PENDING" and rig.nodes_of("g", "w") == []
    rig.session(advance_s=61)  # after the backoff it says why it waits
    group = rig.controller.group("g")
    assert group.status == "PENDING" and rig.nodes_of("g", "w") == []
    assert group.pend_reason is not None and group.pend_reason.cls == "infeasible"


# Required vs preferred, at member and group level, when only a split placement exists.
@pytest.mark.parametrize(
    ("where", "topology", "required", "status", "cls"),
    [
        ("member", pack("rack"), True, "PENDING", "topology"),
        ("member", pack("rack"), False, "RUNNING", None),
        ("group", pack("block"), True, "PENDING", "topology"),
        ("group", pack("block"), False, "RUNNING", None),
        ("member", spread("rack"), True, "PENDING", "topology"),
        ("member", spread("rack"), False, "RUNNING", None),
    ],
)
def test_a_required_constraint_waits_where_a_preferred_one_places_split(
    where: str, topology: dict[str, Any], required: bool, status: str, cls: str | None
) -> None:
    # Packs: one free node per block, so 2 nodes in a rack or 3 in a block exist only
    # split. Spread: only block z0/b0 (two racks) is free, so 3 replicas share a rack.
    rig = Rig(a_zoned_cluster())
    topology = {**topology, "required": required}
    if topology["policy"] == "pack":
        rig.occupy(
            "busy",
            {
                n.name: 8
                for n in rig.cluster.nodes
                if n.name.endswith("n0") or n.name.split("-")[2] == "r1"
            },
        )
        tasks = 2 if where == "member" else 3
    else:
        rig.occupy("busy", {n.name: 8 for n in rig.cluster.nodes if not n.name.startswith("z0-b0")})
        tasks = 3
    builder = a_group("g").atomic()
    if where == "group":
        builder = builder.with_topology(topology).with_member("w", gpu=8, tasks=tasks)
    elif topology["policy"] == "pack":
        builder = builder.with_member("w", gpu=8, tasks=tasks, topology=topology)
    else:
        builder = builder.with_member("w", gpu=8, replicas=tasks, topology=topology)
    placed(rig, builder)
    group = rig.controller.group("g")
    assert group.status == status
    if cls is not None:
        assert group.pend_reason is not None and group.pend_reason.cls == cls


def test_group_and_member_constraints_hold_at_once() -> None:
    rig = placed(
        Rig(a_zoned_cluster()),
        a_group("g")
        .with_topology(pack("zone"))
        .with_member("trainer", gpu=8, tasks=2, topology=pack("rack"))
        .with_member("ps", gpu=4, replicas=2, topology=spread("block"))
        .with_member("eval", gpu=8, tasks=3, topology=pack("block")),
    )
    assert rig.status("g") == "RUNNING"
    everyone = [n for m in ("trainer", "ps", "eval") for n in rig.nodes_of("g", m)]
    assert len({domain_of(n, "zone") for n in everyone}) == 1
    assert len(set(domains(rig, "g", "trainer", "rack"))) == 1
    assert len(set(domains(rig, "g", "ps", "block"))) == 2
    assert len(set(domains(rig, "g", "eval", "block"))) == 1


def test_an_untyped_member_laid_out_first_does_not_take_a_typed_members_only_nodes() -> None:
    # "any" (64 GPUs, no type) is the hardest member and goes first; laid out greedily it
    # would fill the H100 zone and leave "h" (H100 only) nothing, although a placement
    # exists: "any" on the A100 zone and "h" on an H100 node. The planner retries with
    # typed members first before it gives up.
    rig = placed(
        Rig(a_zoned_cluster(gpu_types=MIXED)),
        a_group("g").with_member("any", gpu=8, tasks=8).with_member("h", gpu=8, gpu_type="H100"),
    )
    assert rig.status("g") == "RUNNING"
    assert set(domains(rig, "g", "h", "zone")) == {"z0"}
    assert len(rig.nodes_of("g", "any")) == 8
