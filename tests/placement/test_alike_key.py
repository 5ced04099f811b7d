"""`demands_and_scopes_key`, what an alike visit is keyed by instead of the group's
gang demands and scopes: groups with equal keys must have equal demands and scopes.

Groups are made from one spec changed in one thing at a time (each field the key
reads, and fields it must not read: the name, owner and priority), so a key that
leaves out a field the demands or scopes read gives two groups one key for different
demands or scopes. Every pair is compared; how many pairs shared a key is printed.
"""

from __future__ import annotations

import copy
from itertools import combinations
from typing import Any

from costart.domain.lifecycle import submit
from costart.domain.spec import spec_from_object
from costart.domain.world import World
from costart.placement.constraints import resolve_scopes
from costart.placement.incremental.alike_visits import demands_and_scopes_key
from costart.placement.inputs import gang_demands

from .builders import a_cluster

RACK_PACK = {"level": "rack", "policy": "pack", "required": True}
BLOCK_SPREAD = {"level": "block", "policy": "spread", "required": False}

BASE: dict[str, Any] = {
    "name": "g",
    "owner": "alice",
    "priority": 1,
    "placement": {"mode": "reserve", "topology": RACK_PACK},
    "members": [
        {
            "name": "trainer",
            "kind": "job",
            "tasks": 4,
            "shape": {"gpu": 8, "cpu": 32, "mem_gb": 256},
            "topology": RACK_PACK,
        },
        {
            "name": "rollout",
            "kind": "replica-set",
            "replicas": 4,
            "min_start": 2,
            "min_running": 2,
            "shape": {"gpu": 1, "cpu": 8, "mem_gb": 64},
        },
    ],
}


def _changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    at: Any = doc
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return doc


VARIANTS: dict[str, dict[str, Any]] = {
    "base": BASE,
    "group topology": _changed(("placement", "topology"), BLOCK_SPREAD),
    "no group topology": _changed(("placement", "topology"), None),
    "member topology": _changed(("members", 0, "topology"), BLOCK_SPREAD),
    "member name": _changed(("members", 1, "name"), "actor"),
    "shape": _changed(("members", 1, "shape"), {"gpu": 2, "cpu": 8, "mem_gb": 64}),
    "gang part": _changed(("members", 1, "min_start"), 3),
    "desired count": _changed(("members", 1, "replicas"), 6),
    "tasks": _changed(("members", 0, "tasks"), 8),
    # Not read by the demands or the scopes: these share the base's key.
    "owner": _changed(("owner",), "bob"),
    "priority": _changed(("priority",), 3),
    "mode": _changed(("placement", "mode"), "atomic"),
}


def test_equal_keys_mean_equal_demands_and_scopes() -> None:
    cluster = a_cluster()
    world = World()
    groups = {}
    for label, variant in VARIANTS.items():
        name = f"g-{label.replace(' ', '-')}"
        for event in submit(world, spec_from_object({**variant, "name": name}), 0).pending_events:
            world.apply(event)
        group = next(g for g in world.groups.values() if g.name == name)
        members = world.members_of(group)
        groups[label] = (
            demands_and_scopes_key(group, members),
            gang_demands(members, cluster, fixed=False),
            resolve_scopes(group.spec, cluster, {}, world, group),
        )
    shared = 0
    for (a, (key_a, demands_a, scopes_a)), (b, (key_b, demands_b, scopes_b)) in combinations(
        groups.items(), 2
    ):
        if key_a == key_b:
            shared += 1
            assert (demands_a, scopes_a) == (demands_b, scopes_b), f"{a} and {b}: one key"
    print(f"pairs sharing a key: {shared} of {len(groups) * (len(groups) - 1) // 2}")
    assert shared == 6  # base, owner, priority and mode: four groups, six pairs
