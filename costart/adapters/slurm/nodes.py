"""Slurm's nodes (``scontrol show node -o``) as costart's cluster view: what each node
offers, what Slurm has allocated there, and its status.

Status: a node Slurm would give new work is ``up``; one draining or drained (an
operator's ``DRAIN``, a failed registration) is ``drained``; one ``DOWN``, not
responding (``*``), ``FAIL``, powered off or in ``INVAL`` is ``down``. A state word this
adapter does not know fails loudly rather than guessing.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from costart.adapters.slurm.records import (
    SlurmOutputError,
    mem_mb,
    need,
    parse_records,
    parse_tres,
    whole_gb,
)
from costart.domain.capacity import Capacity

NodeStatus = Literal["up", "drained", "down"]
_BASE: Final = {"IDLE", "MIXED", "ALLOCATED", "ALLOC", "COMPLETING", "PLANNED", "RESERVED"}
_DOWN_BASE: Final = {"DOWN", "FUTURE", "UNKNOWN"}
_DRAINED_FLAGS: Final = {"DRAIN", "DRAINING", "DRAINED", "MAINTENANCE", "REBOOT_REQUESTED"}
_DOWN_FLAGS: Final = {
    "FAIL",
    "FAILING",
    "INVALID_REG",
    "INVAL",
    "NOT_RESPONDING",
    "POWERED_DOWN",
    "POWER_DOWN",
    "POWERING_DOWN",
    "POWERING_UP",
    "REBOOT_ISSUED",
}
_KNOWN_FLAGS: Final = (
    _DRAINED_FLAGS
    | _DOWN_FLAGS
    | {
        "CLOUD",
        "COMPLETING",
        "DYNAMIC_FUTURE",
        "DYNAMIC_NORM",
        "NO_RESPOND",
        "PLANNED",
        "RESERVED",
        "RESUME",
        "POWER_UP",
        "UNDRAIN",
    }
)


class SlurmNode(msgspec.Struct, frozen=True):
    """One node as Slurm reports it. ``capacity``: what it offers (memory rounded down
    to whole GB); ``allocated``: what Slurm's jobs hold there now (rounded up)."""

    name: str
    capacity: Capacity
    allocated: Capacity
    status: NodeStatus
    state: str
    features: tuple[str, ...]
    partitions: tuple[str, ...]
    reason: str = ""
    gpu_type: str | None = None  # the one GPU type its Gres names (none, or several: None)


def node_status(state: str, what: str) -> NodeStatus:
    """``IDLE``, ``MIXED+DRAIN``, ``IDLE*`` ... as costart's node status."""
    not_responding = state.endswith("*")
    words = state.rstrip("*~#!%$@^-").split("+")
    base, flags = words[0], set(words[1:])
    unknown = flags - _KNOWN_FLAGS
    if base not in _BASE | _DOWN_BASE or unknown:
        raise SlurmOutputError(f"{what}: node state {state!r} is not one this adapter knows")
    if not_responding or base in _DOWN_BASE or flags & _DOWN_FLAGS:
        return "down"
    if flags & _DRAINED_FLAGS:
        return "drained"
    return "up"


def _gpus(gres: str, what: str) -> int:
    """GPUs in a node's ``Gres=`` (``gpu:4``, ``gpu:a100:2(S:0-1),gpu:v100:1``)."""
    if gres in ("", "(null)"):
        return 0
    total = 0
    for part in gres.split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] != "gpu":
            continue
        count = fields[-1]
        if not count.isdigit():
            raise SlurmOutputError(f"{what}: GPU count in Gres={gres!r} is not a number")
        total += int(count)
    return total


def _gpu_type(gres: str) -> str | None:
    """The GPU type ``Gres=gpu:a100:2`` names, if every GPU entry names the same one."""
    types = {
        fields[1]
        for part in gres.split(",")
        if (fields := part.split("(")[0].split(":"))[0] == "gpu" and len(fields) == 3
    }
    untyped = any(
        (fields := part.split("(")[0].split(":"))[0] == "gpu" and len(fields) == 2
        for part in gres.split(",")
    )
    return types.pop() if len(types) == 1 and not untyped else None


def _names(text: str) -> tuple[str, ...]:
    return () if text in ("", "(null)") else tuple(sorted(text.split(",")))


def parse_node(record: dict[str, str], what: str) -> SlurmNode:
    name = need(record, "NodeName", what)
    where = f"{what} (node {name})"
    cpus = need(record, "CPUTot", where)
    if not cpus.isdigit():
        raise SlurmOutputError(f"{where}: CPUTot={cpus!r} is not a count")
    capacity = Capacity(
        gpu=_gpus(record.get("Gres", ""), where),
        cpu=int(cpus),
        mem_gb=whole_gb(mem_mb(need(record, "RealMemory", where), where), up=False),
    )
    # Without slurmdbd, GPUs are no tracked TRES: ``scontrol -d`` prints ``GresUsed=``.
    allocated = parse_tres(record.get("AllocTRES", ""), where)
    if "GresUsed" in record:
        allocated = msgspec.structs.replace(
            allocated, gpu=max(allocated.gpu, _gpus(record["GresUsed"], where))
        )
    state = need(record, "State", where)
    return SlurmNode(
        name=name,
        capacity=capacity,
        allocated=allocated,
        status=node_status(state, where),
        state=state,
        features=_names(record.get("ActiveFeatures", "")),
        partitions=_names(record.get("Partitions", "")),
        reason=record.get("Reason", ""),
        gpu_type=_gpu_type(record.get("Gres", "")),
    )


def parse_nodes(text: str) -> list[SlurmNode]:
    """Every node of ``scontrol -d show node -o``, in Slurm's order."""
    return [
        parse_node(record, f"scontrol show node line {n}")
        for n, record in enumerate(parse_records(text, "scontrol show node"), 1)
    ]
