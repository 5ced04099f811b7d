"""The two-node cluster of the expected-start tests (``two_nodes.toml``: two 8-GPU nodes
in one rack) and a group spec, as the REST API takes it, of gangs sized to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CLUSTER = Path(__file__).with_name("two_nodes.toml")


def gang_doc(name: str, tasks: int, limit: str | None = None) -> dict[str, Any]:
    """alice's group ``name``: one job of ``tasks`` tasks of a whole node (8 GPUs) each,
    declaring ``limit`` as its max runtime when given."""
    member: dict[str, Any] = {"name": "w", "kind": "job", "tasks": tasks, "shape": {"gpu": 8}}
    if limit is not None:
        member["max_runtime"] = limit
    return {"name": name, "owner": "alice", "members": [member]}
