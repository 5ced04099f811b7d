"""One task as one held Slurm job: the batch script (the member's run table: its
environment, working directory and argv) and ``sbatch``'s options (pinned to the
placed node with the placed shape, under the owner's account, held until the barrier).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Final

from costart.adapters.slurm.identity import JobIdentity
from costart.agent.accounts import Account
from costart.agent.model import NodeTask, Refused
from costart.domain.capacity import Capacity
from costart.domain.run_table import RunSpec
from costart.domain.slurm_table import SlurmSpec


def batch_script(run: RunSpec, task: NodeTask) -> str:
    """A POSIX shell script that sets the task's environment and runs its argv."""
    return script_as_task(run, task, "exec " + " ".join(shlex.quote(a) for a in run.argv))


def script_as_task(run: RunSpec, task: NodeTask, command: str) -> str:
    """A POSIX shell script that sets the task's environment and working directory (as
    its own job would) and then runs ``command`` (shell words, already quoted)."""
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
    lines.append(command)
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
        *_pinned(identity.job_name(), node, account, output),
        f"--cpus-per-task={max(shape.cpu, 1)}",
        f"--mem={max(shape.mem_gb * 1024, 1)}M",
    ]
    if shape.gpu:
        options.append(f"--gres=gpu:{shape.gpu}")
    table = slurm if slurm is not None else SlurmSpec()
    options += _billed(table, partition)
    if table.time_limit_ns is not None:
        options.append(f"--time={time_limit_minutes(table.time_limit_ns)}")
    options.extend(table.options)
    return options


PROBE_MEM_MB: Final = 64


def probe_options(
    name: str,
    node: str,
    account: Account,
    timeout_ns: int,
    *,
    partition: str | None = None,
    slurm: SlurmSpec | None = None,
) -> Sequence[str]:
    """A claim probe's check as a short job: on ``node``, as ``account``, one CPU and
    `PROBE_MEM_MB`, billed as the member's jobs are, never longer than the probe's
    timeout (Slurm's limit, in whole minutes, is the backstop of the script's own)."""
    table = slurm if slurm is not None else SlurmSpec()
    return [
        *_pinned(name, node, account, "/dev/null"),
        "--cpus-per-task=1",
        f"--mem={PROBE_MEM_MB}M",
        f"--time={time_limit_minutes(timeout_ns)}",
        *_billed(table, partition),
    ]


def _pinned(name: str, node: str, account: Account, output: str) -> list[str]:
    """One task on ``node`` as ``account``, named ``name``, with no environment of ours
    and never requeued (a requeued job would run again outside costart's attempts)."""
    return [
        f"--job-name={name}",
        f"--nodelist={node}",
        "--nodes=1",
        "--ntasks=1",
        f"--uid={account.uid}",
        f"--gid={account.gid}",
        f"--output={output}",
        "--chdir=/",
        "--export=NONE",
        "--no-requeue",
    ]


def _billed(table: SlurmSpec, partition: str | None) -> list[str]:
    """The member's partition (else the adapter's), account and QoS."""
    options = []
    if table.partition or partition:
        options.append(f"--partition={table.partition or partition}")
    if table.account:
        options.append(f"--account={table.account}")
    if table.qos:
        options.append(f"--qos={table.qos}")
    return options


def time_limit_minutes(ns: int) -> int:
    """Slurm's time limit in whole minutes, rounded up (never shorter than costart's)."""
    return max(1, -(-ns // (60 * 10**9)))
