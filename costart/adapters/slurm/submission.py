"""One task as one held Slurm job: the batch script (the member's run table: its
environment, working directory and argv) and ``sbatch``'s options (pinned to the
placed node with the placed shape, under the owner's account, held until the barrier).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from costart.adapters.slurm.identity import JobIdentity
from costart.agent.accounts import Account
from costart.agent.model import NodeTask, Refused
from costart.domain.capacity import Capacity
from costart.domain.run_table import RunSpec
from costart.domain.slurm_table import SlurmSpec


def batch_script(run: RunSpec, task: NodeTask) -> str:
    """A POSIX shell script that sets the task's environment and runs its argv."""
    if run.secrets:
        raise Refused("the Slurm adapter passes no secrets: the member's run table names some")
    env = [
        ("COSTART_GROUP", task.group),
        ("COSTART_GROUP_ID", task.group_id),
        ("COSTART_MEMBER", task.member),
        ("COSTART_TASK", str(task.task)),
        ("COSTART_ATTEMPT", str(task.task_attempt)),
        *run.env,
    ]
    lines = ["#!/bin/sh", *(f"export {name}={shlex.quote(value)}" for name, value in env)]
    if run.cwd:
        lines.append(f"cd {shlex.quote(run.cwd)} || exit 126")
    lines.append("exec " + " ".join(shlex.quote(arg) for arg in run.argv))
    return "\n".join(lines) + "\n"


def sbatch_options(
    identity: JobIdentity,
    node: str,
    shape: Capacity,
    account: Account,
    *,
    output: str,
    partition: str | None = None,
    slurm: SlurmSpec | None = None,
) -> Sequence[str]:
    """Held, pinned to ``node``, exactly ``shape`` (memory never 0: to Slurm that means
    the whole node), as ``account``'s uid and gid; the member's ``slurm`` table's
    partition (else ``partition``, the adapter's), account, QoS, time limit and
    options (validated at submit, `costart.domain.slurm_table`) after costart's own."""
    options = [
        "--hold",
        f"--job-name={identity.job_name()}",
        f"--nodelist={node}",
        "--nodes=1",
        "--ntasks=1",
        f"--cpus-per-task={max(shape.cpu, 1)}",
        f"--mem={max(shape.mem_gb * 1024, 1)}M",
        f"--uid={account.uid}",
        f"--gid={account.gid}",
        f"--output={output}",
        "--chdir=/",
        "--export=NONE",
        "--no-requeue",
    ]
    if shape.gpu:
        options.append(f"--gres=gpu:{shape.gpu}")
    table = slurm if slurm is not None else SlurmSpec()
    if table.partition or partition:
        options.append(f"--partition={table.partition or partition}")
    if table.account:
        options.append(f"--account={table.account}")
    if table.qos:
        options.append(f"--qos={table.qos}")
    if table.time_limit_ns is not None:
        options.append(f"--time={time_limit_minutes(table.time_limit_ns)}")
    options.extend(table.options)
    return options


def time_limit_minutes(ns: int) -> int:
    """Slurm's time limit in whole minutes, rounded up (never shorter than costart's)."""
    return max(1, -(-ns // (60 * 10**9)))
