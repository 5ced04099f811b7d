"""What each field of a cluster file does: the words of its reference (the docs' cluster
page), keyed by the path `costart.domain.spec_reference.document_fields` walks from the
file's document types (`costart.placement.cluster_file`); a test keeps them equal."""

from __future__ import annotations

from typing import Final

from costart.domain.spec_reference import document_fields
from costart.placement.cluster_file import MAX_NODES, ClusterDoc

_NAMED_KEYS: Final = {
    "nodes.labels": "<label>",
    "generate.labels": "<label>",
    "placement_groups": "<group>",
}
_RESOURCES = "per node; a node needs some gpu, cpu or mem_gb"

CLUSTER_DESCRIPTIONS: Final[dict[str, str]] = {
    "levels": "The topology levels, outermost first (zone, block, rack); the node is the "
    "implied innermost level. Specs name these levels in `topology`.",
    "nodes": "Nodes one by one.",
    "nodes.name": "The node's name, unique in the cluster (agents are bound to it).",
    "nodes.path": "One domain name per level, outermost first: where the node sits.",
    "nodes.gpu": f"Accelerators, {_RESOURCES}.",
    "nodes.cpu": f"CPU cores, {_RESOURCES}.",
    "nodes.mem_gb": f"Memory in GB, {_RESOURCES}.",
    "nodes.gpu_type": "The accelerator type (a shape's `gpu_type` asks for it).",
    "nodes.labels": "Key-value labels of the node.",
    "nodes.status": '"up", "drained" (runs what it has, takes nothing new) or "down" at '
    "start; agents' heartbeats and `PUT /v1/nodes/N/status` change it later.",
    "generate": f"A grid of identical nodes; at most {MAX_NODES} nodes in all.",
    "generate.node_prefix": "Node names: the prefix and a number, counted per section "
    "(h0000, h0001, ...).",
    "generate.counts": "Domains per remaining level below `under`, then nodes per innermost "
    "domain; each positive. Generated domain names are the level's first letter and a "
    "number (b3, r7).",
    "generate.under": "The fixed outer path (domain names of the first levels).",
    "generate.gpu": f"Accelerators, {_RESOURCES}.",
    "generate.cpu": f"CPU cores, {_RESOURCES}.",
    "generate.mem_gb": f"Memory in GB, {_RESOURCES}.",
    "generate.gpu_type": "The accelerator type of every generated node.",
    "generate.labels": "Key-value labels of every generated node.",
    "placement_groups": "Named placement groups: members (of any co-start group) that name "
    "one in `topology` are co-placed in one domain of its level, without starting together.",
    "placement_groups.<group>.level": "The level whose domains the group's members share "
    "(or spread across).",
    "placement_groups.<group>.policy": '"pack": one domain; "spread": across domains.',
    "placement_groups.<group>.required": "true: refuse a placement that breaks the policy; "
    "false: a preference.",
}


def cluster_fields() -> list[tuple[str, str, bool, str | None, str]]:
    """Every field of a cluster file: path, type, required, default (JSON) and its words.
    Raises `KeyError` naming a field without words."""
    found = []
    for path, type_name, required, default in document_fields(ClusterDoc, _NAMED_KEYS):
        if path not in CLUSTER_DESCRIPTIONS:
            raise KeyError(f"cluster field {path} has no description")
        found.append((path, type_name, required, default, CLUSTER_DESCRIPTIONS[path]))
    return found
