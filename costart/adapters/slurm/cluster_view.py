"""Slurm's nodes beside costart's cluster view (ADR 0120).

`cluster_toml` writes the cluster file `costart serve` places on from what Slurm reports;
`shortfall` says, for one node, where Slurm now offers less than costart's view of it
(or no longer has it), the reason the adapter drains it with; `surplus` where Slurm
offers more (costart under-uses the node: worth a log line, not a drain).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import msgspec

from costart.adapters.slurm.nodes import SlurmNode
from costart.adapters.slurm.records import SlurmOutputError
from costart.domain.capacity import Capacity
from costart.domain.limits import LABEL_PATTERN

_LABEL: Final = re.compile(LABEL_PATTERN)
AMOUNTS: Final = ("gpu", "cpu", "mem_gb")


class ViewedNode(msgspec.Struct, frozen=True):
    """A node as `costart serve` has it (``GET /v1/nodes/{node}``)."""

    node: str
    gpu: int
    cpu: int
    mem_gb: int
    status: str
    gpu_type: str | None = None

    @property
    def capacity(self) -> Capacity:
        return Capacity(gpu=self.gpu, cpu=self.cpu, mem_gb=self.mem_gb)


def _label(node: str, kind: str, name: str) -> str:
    key = f"{kind}/{name}"
    if not (_LABEL.fullmatch(name) and _LABEL.fullmatch(key)):
        raise SlurmOutputError(f"node {node}: {kind} {name!r} cannot be a costart label")
    return key


def _quoted(text: str) -> str:
    # Every value was matched against the label or name pattern: no quote or backslash.
    return f'"{text}"'


def cluster_toml(nodes: Iterable[SlurmNode]) -> str:
    """The cluster file for ``nodes``, ordered by name: each node's CPUs, memory (whole
    GB, rounded down), GPUs and their type when its Gres names one; its features and
    partitions as labels ``feature/NAME`` and ``partition/NAME`` (value ``"yes"``). No
    topology levels: Slurm's node listing names none. A node Slurm has no capacity for
    (nothing registered yet) fails loudly rather than being written out wrong."""
    lines = [
        "# Written by `costart slurm cluster-file` from `scontrol show node`.",
        "levels = []",
    ]
    for node in sorted(nodes, key=lambda n: n.name):
        if not _LABEL.fullmatch(node.name):
            raise SlurmOutputError(f"node {node.name!r}: not a name costart takes")
        cap = node.capacity
        if cap.gpu == cap.cpu == cap.mem_gb == 0:
            raise SlurmOutputError(f"node {node.name}: Slurm reports no CPU, memory or GPU")
        lines += ["", "[[nodes]]", f"name = {_quoted(node.name)}", "path = []"]
        lines += [f"{amount} = {getattr(cap, amount)}" for amount in AMOUNTS]
        if node.gpu_type is not None and cap.gpu:
            if not _LABEL.fullmatch(node.gpu_type):
                raise SlurmOutputError(f"node {node.name}: GPU type {node.gpu_type!r} is no name")
            lines.append(f"gpu_type = {_quoted(node.gpu_type)}")
        labels = [_label(node.name, "feature", f) for f in node.features]
        labels += [_label(node.name, "partition", p) for p in node.partitions]
        if labels:
            body = ", ".join(f'{_quoted(key)} = "yes"' for key in sorted(labels))
            lines.append(f"labels = {{ {body} }}")
    return "\n".join(lines) + "\n"


def shortfall(name: str, slurm: SlurmNode | None, view: ViewedNode) -> str:
    """Where Slurm offers less than costart's view of node ``name`` ("" when it offers
    at least as much): the reason the node is drained with."""
    if slurm is None:
        return f"slurm no longer has node {name}, the cluster file does"
    pairs = [
        (f"{amount}={got}", str(said))
        for amount in AMOUNTS
        if (got := getattr(slurm.capacity, amount)) < (said := getattr(view.capacity, amount))
    ]
    if view.gpu_type is not None and view.gpu and slurm.gpu_type != view.gpu_type:
        pairs.append((f"gpu type {slurm.gpu_type or 'none'}", f"gpu type {view.gpu_type}"))
    if not pairs:
        return ""
    got = ", ".join(p[0] for p in pairs)
    said = ", ".join(p[1] for p in pairs)
    return f"slurm reports {got} for {name}, the cluster file says {said}"


def surplus(slurm: SlurmNode, view: ViewedNode) -> str:
    """Where Slurm offers more than costart's view ("" when not): costart places less
    there than it could until the cluster file is written again."""
    more = [
        f"{amount}={getattr(slurm.capacity, amount)} (cluster file {getattr(view.capacity, amount)})"
        for amount in AMOUNTS
        if getattr(slurm.capacity, amount) > getattr(view.capacity, amount)
    ]
    return ", ".join(more)
