"""Costart in front of real Slurm daemons (issue 37): `costart serve` and `costart slurm`
as real processes, an RL-shaped group's members run as Slurm jobs."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.slurm.daemons import SlurmCluster
from tests.adapters.slurm.harness import SlurmFront
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def front(fresh_slurm: SlurmCluster, tmp_path: Path) -> Iterator[SlurmFront]:
    running = SlurmFront(tmp_path, fresh_slurm)
    try:
        yield running
    finally:
        running.close()


def rl_group(name: str, work: Path) -> dict[str, Any]:
    """A trainer (2 GPUs) whose weights claim an outside driver readies, three rollout
    replicas (a GPU each) restarted on their own, a reward model; every task records
    its start in ``work/starts.txt`` and then sleeps."""
    record = f'echo "$COSTART_MEMBER $COSTART_TASK $COSTART_ATTEMPT" >> {work}/starts.txt'
    argv = ["/bin/sh", "-c", f"{record}; exec sleep 600"]
    return {
        "name": name,
        "owner": "alice",
        "barrier": {"timeout": "120s"},
        "failure": {
            "default": "fail-group",
            "rules": [{"members": ["rollout"], "action": "restart-member", "max_restarts": 3}],
        },
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": 1,
                "shape": {"gpu": 2, "cpu": 2, "mem_gb": 4},
                "claims": ["weights"],
                "run": {"argv": argv},
            },
            {
                "name": "rollout",
                "kind": "replica-set",
                "replicas": 3,
                "shape": {"gpu": 1, "cpu": 1, "mem_gb": 2},
                "run": {"argv": argv},
            },
            {
                "name": "reward",
                "kind": "replica-set",
                "replicas": 1,
                "shape": {"cpu": 1, "mem_gb": 1},
                "run": {"argv": argv},
            },
        ],
    }


def starts(work: Path) -> list[str]:
    path = work / "starts.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_an_rl_group_runs_as_slurm_jobs_released_only_after_its_claim_and_a_killed_rollout_is_a_new_job(
    front: SlurmFront,
) -> None:
    work = front.slurm.root / "work"
    (work / "starts.txt").unlink(missing_ok=True)
    gid = front.submit(rl_group("rl", work))
    first = Counter({("trainer", 0, 1): 1, **{("rollout", i, 1): 1 for i in range(3)}})
    first[("reward", 0, 1)] = 1

    # Every task is a held Slurm job, on the node costart placed it, before any claim.
    wait_until(lambda: front.runs(gid) == first, 60, lambda: f"five held jobs\n{front.logs()}")
    time.sleep(2.0)  # several adapter passes: nothing may be released before READY
    jobs = front.jobs(gid)
    assert all(j.held and j.phase == "waiting" for j in jobs), [j.state for j in jobs]
    assert starts(work) == []
    placed = front.placed_nodes("rl")
    assert {(j.identity.member, j.identity.task): j.requested for j in jobs if j.identity} == placed
    assert front.state("rl") not in ("RUNNING", "STARTING")

    # The outside claim driver readies the claim: the barrier opens, Slurm runs them all.
    front.ready("rl", "trainer", "weights")
    wait_until(
        lambda: all(j.phase == "running" for j in front.jobs(gid)),
        60,
        lambda: f"five running jobs\n{front.logs()}",
    )
    wait_until(lambda: front.state("rl") == "RUNNING", 60, lambda: f"group RUNNING\n{front.logs()}")
    running = {(j.identity.member, j.identity.task): j.nodes for j in front.jobs(gid) if j.identity}
    assert running == placed  # pinned where costart placed them
    wait_until(lambda: len(starts(work)) == 5, 30, "five starts recorded")
    assert all(j.user == "nobody" for j in front.jobs(gid))  # the owner's mapped account

    # A rollout killed in Slurm: reported, and restarted as a new job with the next attempt.
    (victim,) = [j for j in front.jobs(gid) if j.identity and j.identity[1:3] == ("rollout", 1)]
    front.slurm.run("scancel", "--signal=KILL", str(victim.job_id))
    wait_until(
        lambda: any(
            j.identity and j.identity[1:] == ("rollout", 1, 2) and j.phase == "running"
            for j in front.jobs(gid)
        ),
        90,
        lambda: f"rollout 1 attempt 2 running\n{front.logs()}",
    )
    time.sleep(2.0)  # a duplicate submission would show by now
    assert front.runs(gid) == first + Counter({("rollout", 1, 2): 1})
    failed = [e for e in front.events("rl") if e["event"] == "MemberFailed"]
    assert [e["member"] for e in failed] == ["rollout"]
    assert front.state("rl") == "RUNNING"

    # Cancel: every job of the group is cancelled in Slurm.
    front.api.call("POST", "/v1/groups/rl/cancel", dict[str, Any])
    wait_until(
        lambda: all(j.phase == "ended" for j in front.jobs(gid)),
        60,
        lambda: f"every job ended\n{front.logs()}",
    )
