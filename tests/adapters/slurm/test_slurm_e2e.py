"""Costart in front of real Slurm daemons (issue 37): `costart serve` and `costart slurm`
as real processes, an RL-shaped group's members run as Slurm jobs."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.slurm.harness import SlurmFront
from tests.agent.harness import wait_until

pytestmark = pytest.mark.timeout(300)


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


def _adapter_said(front: SlurmFront, text: str) -> bool:
    return any(
        text in front.directory.joinpath(f"slurm-{i}.log").read_text()
        for i in range(1, front.adapters + 1)
    )


def test_a_killed_adapter_restarts_without_duplicate_jobs_and_leaves_unknown_jobs_alone(
    front: SlurmFront,
) -> None:
    work = front.slurm.root / "work"
    gid = front.submit(rl_group("again", work))
    first = Counter({("trainer", 0, 1): 1, **{("rollout", i, 1): 1 for i in range(3)}})
    first[("reward", 0, 1)] = 1
    wait_until(lambda: front.runs(gid) == first, 60, lambda: f"five held jobs\n{front.logs()}")

    # A job named as one of this group's that the adapter never submitted: reported only.
    stranger = front.slurm.run(
        "sbatch", "--parsable", "--hold", "--uid=nobody", "--chdir=/", "--output=/dev/null",
        "-w", "n4", "-c", "1", "--mem=100M", "-J", f"costart.{gid}.trainer.0.7",
        "--wrap", "sleep 600",
    ).stdout.strip()  # fmt: skip
    # Slurm drains a node: costart hears it as the node's status.
    front.slurm.run("scontrol", "update", "nodename=n4", "state=drain", "reason=maintenance")
    try:
        wait_until(
            lambda: '"node": "n4", "status": "drained"' in front.adapter.log.read_text(),
            30,
            lambda: f"n4 reported drained\n{front.logs()}",
        )
    finally:
        front.slurm.run("scontrol", "update", "nodename=n4", "state=resume")

    front.adapter.kill()  # SIGKILL: no goodbye
    front.adapter = front.start_adapter()
    front.ready("again", "trainer", "weights")
    wait_until(
        lambda: (
            front.runs(gid)[("trainer", 0, 1)] == 1
            and all(
                j.phase == "running"
                for j in front.jobs(gid)
                if j.identity and j.identity.attempt == 1
            )
        ),
        60,
        lambda: f"five running jobs\n{front.logs()}",
    )
    wait_until(lambda: front.state("again") == "RUNNING", 60, lambda: f"RUNNING\n{front.logs()}")
    time.sleep(2.0)  # a duplicate would show by now
    assert front.runs(gid) == first + Counter({("trainer", 0, 7): 1})
    (unknown,) = [j for j in front.jobs(gid) if str(j.job_id) == stranger]
    assert unknown.held and unknown.phase == "waiting"  # neither released nor cancelled
    assert _adapter_said(front, "did not submit: left alone")
    front.slurm.run("scancel", stranger)


def _running_attempt(front: SlurmFront, gid: str, member: str, task: int, attempt: int) -> bool:
    return any(
        j.identity is not None
        and j.identity[1:] == (member, task, attempt)
        and j.phase == "running"
        for j in front.jobs(gid)
    )


@pytest.mark.slow
def test_rollouts_killed_again_and_again_are_each_one_new_job_per_attempt(
    front: SlurmFront,
) -> None:
    work = front.slurm.root / "work"
    gid = front.submit(rl_group("kills", work))
    wait_until(lambda: len(front.runs(gid)) == 5, 60, lambda: f"five jobs\n{front.logs()}")
    front.ready("kills", "trainer", "weights")
    wait_until(lambda: front.state("kills") == "RUNNING", 60, lambda: f"RUNNING\n{front.logs()}")
    expected = Counter({("trainer", 0, 1): 1, **{("rollout", i, 1): 1 for i in range(3)}})
    expected[("reward", 0, 1)] = 1
    # Rollout 1 killed three times in a row, then all three rollouts at once.
    for attempt in (1, 2, 3):
        wait_until(lambda a=attempt: _running_attempt(front, gid, "rollout", 1, a), 90, "running")
        (job,) = [
            j for j in front.jobs(gid) if j.identity and j.identity[1:] == ("rollout", 1, attempt)
        ]
        front.slurm.run("scancel", "--signal=KILL", str(job.job_id))
        expected[("rollout", 1, attempt + 1)] = 1
    wait_until(lambda: _running_attempt(front, gid, "rollout", 1, 4), 90, "attempt 4 running")
    live = [j for j in front.jobs(gid) if j.identity and j.identity.member == "rollout"]
    live = [j for j in live if j.phase == "running"]
    assert len(live) == 3
    before = front.runs(gid)
    assert before == expected
    for job in live:
        front.slurm.run("scancel", "--signal=KILL", str(job.job_id))

    def relaunched() -> bool:
        new = front.runs(gid) - before
        return sum(j.phase == "running" for j in front.jobs(gid)) == 5 and len(new) == 3

    wait_until(
        relaunched, 120, lambda: f"three rollouts relaunched\n{front.runs(gid)}\n{front.logs()}"
    )
    time.sleep(2.0)  # a second relaunch or a duplicate would show by now
    new = front.runs(gid) - before
    # Each killed rollout is exactly one new job, at an attempt newer than the one killed
    # (the member's attempt: the three share it).
    assert sorted(t for _, t, _ in new) == [0, 1, 2] and set(new.values()) == {1}
    assert all(m == "rollout" and a > 4 for m, _, a in new)
    expected = before + new
    time.sleep(2.0)
    assert front.runs(gid) == expected
    assert front.state("kills") == "RUNNING"
    front.api.call("POST", "/v1/groups/kills/cancel", dict[str, Any])
    wait_until(lambda: all(j.phase == "ended" for j in front.jobs(gid)), 60, "every job ended")
