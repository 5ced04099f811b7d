"""Deterministic aggregate ids (uuid5 of stable names; never uuid4).

A group's id is derived from its submission sequence number and its name, so a name can
be reused after the earlier group ended, and the same command history always yields the
same ids (the same log bytes).
"""

from __future__ import annotations

from uuid import UUID, uuid5

COSTART_NAMESPACE = UUID("6f1c2a59-4c3e-5b8e-9d8a-0c057a27e0c1")


def group_id(submission_seq: int, name: str) -> UUID:
    return uuid5(COSTART_NAMESPACE, f"group/{submission_seq}/{name}")


def member_id(of_group: UUID, member_name: str) -> UUID:
    return uuid5(of_group, f"member/{member_name}")


CLUSTER_ID = uuid5(COSTART_NAMESPACE, "cluster")
"""The cluster's own event stream (node status reports)."""
