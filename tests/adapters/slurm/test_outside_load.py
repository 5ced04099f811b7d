"""Slurm jobs costart did not submit, in `serve`'s placement (ADR 0118): the adapter
reports what they hold per node, placement counts it out, a group that needs it pends
naming it, and starts on the node an outside job left."""

from __future__ import annotations

from typing import Any

import pytest

from costart.adapters.slurm.jobs import parse_jobs
from tests.adapters.slurm.daemons import NODES, SlurmCluster
from tests.adapters.slurm.harness import SlurmFront, whole_node_group
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)


def outside_job(slurm: SlurmCluster, node: str, gpus: int) -> int:
    """A job submitted to Slurm directly (as root, not through costart) on ``node``."""
    out = slurm.run(
        "sbatch", "--parsable", f"--nodelist={node}", "--nodes=1", "--ntasks=1",
        "--cpus-per-task=1", "--mem=1G", f"--gres=gpu:{gpus}", "--output=/dev/null",
        "--job-name=outside", "--wrap=exec sleep 600",
    ).stdout  # fmt: skip
    return int(out.strip().split(";")[0])


def running(slurm: SlurmCluster, job: int) -> bool:
    out = slurm.run("scontrol", "show", "job", "-o", str(job)).stdout
    return "JobState=RUNNING" in out


GPUS_PER_NODE = 4


class WithinCapacity:
    """At every poll: per node, the GPUs costart holds or placed plus those Slurm's
    outside jobs hold stay within the node's four (``polls``: how many were checked)."""

    def __init__(self, front: SlurmFront) -> None:
        self.front = front
        self.polls = 0

    def __call__(self) -> None:
        held: dict[str, int] = {}
        for hold in self.front.api.call_list("/v1/holds", dict[str, Any]):
            held[hold["node"]] = held.get(hold["node"], 0) + hold.get("gpu", 0)
        found = parse_jobs(self.front.slurm.run("scontrol", "show", "job", "-o").stdout)
        outside = [j for j in found if j.identity is None and j.phase == "running"]
        for node in NODES:
            theirs = sum(j.allocated.gpu for j in outside if j.nodes == node)
            assert held.get(node, 0) + theirs <= GPUS_PER_NODE, (node, held, theirs)
        self.polls += 1


def test_outside_slurm_jobs_hold_capacity_a_group_pends_naming_them_and_starts_when_one_ends(
    front: SlurmFront,
) -> None:
    # One GPU of every node is taken by a job costart never saw.
    outside = {node: outside_job(front.slurm, node, 1) for node in NODES}
    wait_until(
        lambda: all(running(front.slurm, job) for job in outside.values()),
        60,
        lambda: f"four outside jobs running\n{front.logs()}",
    )
    # The adapter has told `serve` (its log says so once per change and node).
    wait_until(
        lambda: front.adapter.log.read_text().count('"outside Slurm load"') >= len(NODES),
        30,
        lambda: f"the outside use reported\n{front.logs()}",
    )
    gid = front.submit(whole_node_group("whole"))
    within = WithinCapacity(front)

    def reason() -> str:
        within()
        found = front.group("whole")["group"].get("pend_reason") or {}
        return str(found.get("message", ""))

    def placed() -> dict[tuple[str, int], str]:
        within()
        return front.placed_nodes("whole")

    # No node has four free GPUs: the group pends, and its reason names Slurm's use.
    wait_until(
        lambda: all(f"{n} {{gpu:1, cpu:1, mem_gb:1}} (slurm)" in reason() for n in NODES[:4]),
        60,
        lambda: f"a reason naming the outside use, got {reason()!r}\n{front.logs()}",
    )
    assert front.group("whole")["group"]["pend_reason"]["cls"] == "capacity", reason()
    assert "trainer" in reason() and "{gpu:4, cpu:2, mem_gb:4}" in reason(), reason()
    assert front.state("whole") in ("PENDING", "RESERVING")  # waiting, nothing placed
    assert front.jobs(gid) == []  # nothing submitted to Slurm for it

    # The outside job on n3 ends: the next pass reports n3 free, the group lands there.
    front.slurm.run("scancel", str(outside["n3"]))
    wait_until(
        lambda: placed() == {("trainer", 0): "n3"},
        60,
        lambda: f"trainer placed on n3\n{front.logs()}",
    )
    wait_until(
        lambda: [(j.nodes, j.phase) for j in front.jobs(gid)] == [("n3", "running")],
        60,
        lambda: f"trainer running on n3\n{front.logs()}",
    )
    wait_until(lambda: front.state("whole") == "RUNNING", 60, front.logs)
    assert all(running(front.slurm, outside[n]) for n in ("n1", "n2", "n4"))
    within()
    print(f"per-node capacity checked at {within.polls} polls")
    assert within.polls >= 3
