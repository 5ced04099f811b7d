"""Loading a cluster definition from TOML (strict: unknown fields and bad values are
errors naming the field).

```toml
levels = ["zone", "block", "rack"]        # topology levels, outermost first ("node" implied)

[placement_groups.train-block]            # named placement groups (co-placement)
level = "block"
policy = "pack"
required = true

[[nodes]]                                 # one node
name = "n0001"
path = ["z1", "b1", "r1"]                 # one domain name per level
gpu = 8
gpu_type = "H100"
cpu = 96
mem_gb = 1024
labels = { pool = "train" }
status = "up"                             # up | drained | down

[[generate]]                              # a grid of identical nodes
node_prefix = "h"                         # node names: h0000, h0001, ... (per section)
under = ["z1"]                            # fixed outer path (the first levels)
counts = [16, 8, 32]                      # per remaining level, then nodes per innermost domain
gpu = 8
cpu = 96
mem_gb = 1024
gpu_type = "H100"
```

Generated domain names are the level's first letter plus a number (``b3``, ``r7``).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import msgspec

from costart.domain.limits import LABEL_PATTERN, NAME_PATTERN
from costart.domain.spec_types import Topology
from costart.files import read_named_file
from costart.placement.cluster import NODE_LEVEL, Cluster, ClusterError, Node, NodeStatus

MAX_NODES = 65536
_NAME = re.compile(NAME_PATTERN)
_LABEL = re.compile(LABEL_PATTERN)
_AT = re.compile(r"^(?P<reason>.*) - at `\$(?P<path>[^`]*)`$", re.DOTALL)


class _Doc(msgspec.Struct, forbid_unknown_fields=True):
    """Base of the document types: unknown fields are errors."""


class NodeDoc(_Doc):
    name: str
    path: list[str]
    gpu: int = 0
    cpu: int = 0
    mem_gb: int = 0
    gpu_type: str | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)
    status: NodeStatus = "up"


class GenerateDoc(_Doc):
    node_prefix: str
    counts: list[int]
    under: list[str] = msgspec.field(default_factory=list)
    gpu: int = 0
    cpu: int = 0
    mem_gb: int = 0
    gpu_type: str | None = None
    labels: dict[str, str] = msgspec.field(default_factory=dict)


class ClusterDoc(_Doc):
    levels: list[str]
    nodes: list[NodeDoc] = msgspec.field(default_factory=list)
    generate: list[GenerateDoc] = msgspec.field(default_factory=list)
    placement_groups: dict[str, Topology] = msgspec.field(default_factory=dict)


class ClusterDefinition(msgspec.Struct, frozen=True):
    """What a cluster file defines: the cluster (with node status) and placement groups."""

    levels: tuple[str, ...]
    nodes: tuple[Node, ...]
    down: tuple[tuple[str, NodeStatus], ...]
    placement_groups: tuple[tuple[str, Topology], ...]

    def build(self) -> Cluster:
        """A fresh `Cluster` (its own mutable node status)."""
        cluster = Cluster(self.levels, self.nodes)
        for name, status in self.down:
            cluster.set_status(name, status)
        return cluster


def _error_from_msgspec(error: msgspec.MsgspecError) -> ClusterError:
    match = _AT.match(str(error))
    if match is None:
        return ClusterError("", str(error))
    return ClusterError(match["path"].lstrip("."), match["reason"])


def _check_resources(path: str, gpu: int, cpu: int, mem_gb: int) -> None:
    for field, value in (("gpu", gpu), ("cpu", cpu), ("mem_gb", mem_gb)):
        if value < 0:
            raise ClusterError(f"{path}.{field}", f"must not be negative (got {value})")
    if gpu == cpu == mem_gb == 0:
        raise ClusterError(path, "a node needs some gpu, cpu or mem_gb")


def _node(path: str, doc: NodeDoc, levels: list[str]) -> Node:
    if not doc.name:
        raise ClusterError(f"{path}.name", "empty node name")
    if len(doc.path) != len(levels):
        raise ClusterError(
            f"{path}.path", f"has {len(doc.path)} names; levels are {levels} (one name each)"
        )
    _check_resources(path, doc.gpu, doc.cpu, doc.mem_gb)
    _check_label(f"{path}.name", doc.name)
    for i, domain in enumerate(doc.path):
        _check_label(f"{path}.path[{i}]", domain)
    _check_labels(path, doc.gpu_type, doc.labels)
    return Node(
        name=doc.name,
        path=tuple(doc.path),
        gpu=doc.gpu,
        cpu=doc.cpu,
        mem_gb=doc.mem_gb,
        gpu_type=doc.gpu_type,
        labels=tuple(sorted(doc.labels.items())),
    )


def _check_label(path: str, value: str) -> None:
    if not _LABEL.fullmatch(value):
        raise ClusterError(
            path,
            f"bad name {value!r}: 1-253 of letters, digits and . _ / -, "
            "starting and ending with a letter or digit",
        )


def _check_labels(path: str, gpu_type: str | None, labels: dict[str, str]) -> None:
    if gpu_type is not None:
        _check_label(f"{path}.gpu_type", gpu_type)
    for key, value in sorted(labels.items()):
        _check_label(f"{path}.labels", key)
        _check_label(f"{path}.labels.{key}", value)


def _generated(path: str, doc: GenerateDoc, levels: list[str]) -> list[Node]:
    free_levels = levels[len(doc.under) :]
    if len(doc.under) > len(levels):
        raise ClusterError(f"{path}.under", f"longer than levels {levels}")
    if len(doc.counts) != len(free_levels) + 1:
        raise ClusterError(
            f"{path}.counts",
            f"needs {len(free_levels) + 1} numbers: one per level {free_levels}, then nodes",
        )
    for i, count in enumerate(doc.counts):
        if count <= 0:
            raise ClusterError(f"{path}.counts[{i}]", f"must be positive (got {count})")
    _check_resources(path, doc.gpu, doc.cpu, doc.mem_gb)
    _check_label(f"{path}.node_prefix", f"{doc.node_prefix}0000")  # as in the names made
    for i, domain in enumerate(doc.under):
        _check_label(f"{path}.under[{i}]", domain)
    _check_labels(path, doc.gpu_type, doc.labels)
    ranges = [range(count) for count in doc.counts]
    nodes = []
    for serial, combo in enumerate(itertools.product(*ranges)):
        domains = tuple(f"{level[0]}{k}" for level, k in zip(free_levels, combo, strict=False))
        nodes.append(
            Node(
                name=f"{doc.node_prefix}{serial:04d}",
                path=(*doc.under, *domains),
                gpu=doc.gpu,
                cpu=doc.cpu,
                mem_gb=doc.mem_gb,
                gpu_type=doc.gpu_type,
                labels=tuple(sorted(doc.labels.items())),
            )
        )
    return nodes


def parse_cluster(data: bytes | str) -> ClusterDefinition:
    """Decode and check a cluster TOML document. Raises `ClusterError` naming the field."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        doc = msgspec.toml.decode(raw, type=ClusterDoc)
    except msgspec.ValidationError as error:
        raise _error_from_msgspec(error) from None
    except msgspec.DecodeError as error:
        raise ClusterError("", f"not valid TOML: {error}") from None
    for i, level in enumerate(doc.levels):
        if not _NAME.fullmatch(level) or level == NODE_LEVEL:
            raise ClusterError(f"levels[{i}]", f"bad level name {level!r}")
    nodes = [_node(f"nodes[{i}]", n, doc.levels) for i, n in enumerate(doc.nodes)]
    for i, gen in enumerate(doc.generate):
        nodes.extend(_generated(f"generate[{i}]", gen, doc.levels))
        if len(nodes) > MAX_NODES:
            raise ClusterError(f"generate[{i}]", f"more than {MAX_NODES} nodes")
    if not nodes:
        raise ClusterError("nodes", "a cluster needs at least one node")
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise ClusterError("nodes", f"duplicate node name {node.name!r}")
        seen.add(node.name)
    levels = (*doc.levels, NODE_LEVEL)
    for name, topology in sorted(doc.placement_groups.items()):
        if not _NAME.fullmatch(name):
            raise ClusterError(f"placement_groups.{name!r}", "bad placement group name")
        if topology.level not in levels:
            raise ClusterError(
                f"placement_groups.{name}.level",
                f"unknown level {topology.level!r} (levels: {', '.join(levels)})",
            )
    down = tuple((n.name, n.status) for n in doc.nodes if n.status != "up")
    return ClusterDefinition(
        levels=tuple(doc.levels),
        nodes=tuple(nodes),
        down=down,
        placement_groups=tuple(sorted(doc.placement_groups.items())),
    )


def load_cluster(path: str | Path) -> ClusterDefinition:
    """Read and parse a cluster file (`UnreadableFileError` if it cannot be read)."""
    return parse_cluster(read_named_file(Path(path), "cluster file"))


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return msgspec.json.encode(text).decode()


def cluster_document(definition: ClusterDefinition) -> str:
    """``definition`` as a cluster file, every node written out: `parse_cluster` reads it
    back equal (the cluster a simulated run used, kept for a what-if of its log)."""
    lines = [f"levels = [{', '.join(_toml_string(level) for level in definition.levels)}]"]
    for name, topology in definition.placement_groups:
        lines += [
            "",
            f"[placement_groups.{_toml_string(name)}]",
            f"level = {_toml_string(topology.level)}",
            f"policy = {_toml_string(topology.policy)}",
            f"required = {'true' if topology.required else 'false'}",
        ]
    status = dict(definition.down)
    for node in definition.nodes:
        lines += [
            "",
            "[[nodes]]",
            f"name = {_toml_string(node.name)}",
            f"path = [{', '.join(_toml_string(p) for p in node.path)}]",
            f"gpu = {node.gpu}",
            f"cpu = {node.cpu}",
            f"mem_gb = {node.mem_gb}",
        ]
        if node.gpu_type is not None:
            lines.append(f"gpu_type = {_toml_string(node.gpu_type)}")
        if node.labels:
            pairs = ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in node.labels)
            lines.append(f"labels = {{ {pairs} }}")
        if node.name in status:
            lines.append(f"status = {_toml_string(status[node.name])}")
    return "\n".join(lines) + "\n"
