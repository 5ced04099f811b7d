"""Claim probes as Slurm jobs (ADR 0119): where `costart agent` runs a claim's probe on
its node, `costart slurm` runs each check as a short Slurm job on the node costart
placed the task on, as the task's account, billed as the member's jobs are, so it runs
where the task will and under Slurm's accounting. The job's end is the check's verdict:
``COMPLETED`` passes (the claim is reported READY); any other end is a miss, and the
next check is a new job one ``period`` later; ``fail_after`` misses in a row report the
claim FAILED with the last job's words.

Which claims are probed is the agent's rule (`costart.agent.probe_selection`). An
``exec`` probe runs its command under ``timeout``; a ``file`` probe is ``test -e`` in
the task's working directory. An ``http`` or ``tcp`` probe is left to an outside claim
driver: the adapter has no node-side address policy to check its target against (the
agent's ``--probe-allow``), so it never runs one; it says so in its log once.

Probe jobs are named ``costart-probe.GROUP_ID.MEMBER.CLAIM`` (never a task's name): a
probe job left by an adapter that died ends by its own time limit and is, meanwhile,
other work on its node like any job costart did not submit as a task.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import structlog

from costart.adapters.slurm.commands import Slurm, SlurmCommandError
from costart.adapters.slurm.jobs import SlurmJob
from costart.adapters.slurm.submission import probe_options, script_as_task
from costart.agent.accounts import Accounts
from costart.agent.model import NodeTask, Refused
from costart.agent.probe_selection import ProbeKey, claim_report
from costart.domain.run_table import Probe
from costart.projections import MemberView
from costart.rest.client import ApiError, Client

PROBE_PREFIX: Final = "costart-probe"
RUNS_AS_JOBS: Final = frozenset({"exec", "file"})
NS_PER_S: Final = 10**9


def probe_job_name(key: ProbeKey) -> str:
    return f"{PROBE_PREFIX}.{key.group_id}.{key.member}.{key.claim}"


def check_command(probe: Probe) -> str:
    """The shell words of one check (``exec`` or ``file``)."""
    if probe.kind == "exec":
        seconds = max(1, -(-probe.timeout_ns // NS_PER_S))
        argv = " ".join(shlex.quote(arg) for arg in probe.argv)
        return f"exec timeout -s KILL {seconds} {argv}"
    if probe.kind == "file":
        return f"exec test -e {shlex.quote(probe.target)}"
    raise ValueError(f"a {probe.kind} probe does not run as a Slurm job")


@dataclass
class _Probing:
    job_id: int | None = None
    misses: int = 0
    next_at: float = 0.0
    verdict: tuple[bool, str] | None = None  # to report (kept until delivered)
    done: bool = False  # reported: nothing more to do while the claim is wanted


@dataclass
class SlurmProbes:
    """The probe jobs of one adapter, followed pass by pass (`sync`)."""

    slurm: Slurm
    api: Client
    accounts: Accounts
    partition: str | None = None
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self.probing: dict[ProbeKey, _Probing] = {}
        self.told: set[ProbeKey] = set()  # http/tcp probes already logged as not ours
        self.log = structlog.get_logger("costart.slurm").bind(part="probes")

    def sync(
        self, wanted: Mapping[ProbeKey, tuple[MemberView, NodeTask]], jobs: Mapping[int, SlurmJob]
    ) -> None:
        """One pass: cancel the checks no longer wanted, read the ended ones, report
        verdicts, start the checks that are due. ``jobs``: Slurm's jobs by id."""
        for key in [k for k in self.probing if k not in wanted]:
            gone = self.probing.pop(key)
            job = jobs.get(gone.job_id) if gone.job_id is not None else None
            if job is not None and job.phase != "ended":
                self.slurm.cancel(job.job_id)
        for key, (member, task) in wanted.items():
            probe = member.run.probe(key.claim) if member.run is not None else None
            if probe is None:
                continue
            if probe.kind not in RUNS_AS_JOBS:
                if key not in self.told:
                    self.told.add(key)
                    self.log.info(
                        "probe left to a claim driver: only exec and file probes run as "
                        "Slurm jobs", member=f"{key.group}/{key.member}", claim=key.claim,
                        kind=probe.kind,
                    )  # fmt: skip
                continue
            state = self.probing.setdefault(key, _Probing())
            if state.done:
                continue
            if state.verdict is None:
                self._follow(key, state, probe, member, task, jobs)
            if state.verdict is not None:
                self._report(key, state)

    def _follow(
        self,
        key: ProbeKey,
        state: _Probing,
        probe: Probe,
        member: MemberView,
        task: NodeTask,
        jobs: Mapping[int, SlurmJob],
    ) -> None:
        if state.job_id is not None:
            job = jobs.get(state.job_id)
            if job is not None and job.phase != "ended":
                return  # the check runs (or waits for room on the node)
            ended = f"Slurm probe job {state.job_id} on {task.node}"
            if job is not None and job.outcome().event == "succeeded":
                state.verdict = (True, f"{ended} passed")
                return
            how = "is gone" if job is None else f"ended {job.state} {job.exit_code}:{job.signal}"
            self._miss(key, state, probe, f"{ended} {how}")
            return
        if self.clock() < state.next_at:
            return
        assert member.run is not None
        try:
            account = self.accounts.resolve(task.owner or member.owner)
            script = script_as_task(member.run, task, check_command(probe))
        except Refused as refusal:  # the task could never start here: nor may its probe
            state.verdict = (False, str(refusal))
            return
        options = probe_options(
            probe_job_name(key), task.node, account, probe.timeout_ns,
            partition=self.partition, slurm=member.run.slurm,
        )  # fmt: skip
        try:
            state.job_id = self.slurm.submit(options, script)
        except SlurmCommandError as error:
            self._miss(key, state, probe, f"sbatch refused the probe job: {error}")
            return
        self.log.info(
            "probe job submitted", member=f"{key.group}/{key.member}", claim=key.claim,
            job=state.job_id, node=task.node,
        )  # fmt: skip

    def _miss(self, key: ProbeKey, state: _Probing, probe: Probe, why: str) -> None:
        state.job_id = None
        state.misses += 1
        state.next_at = self.clock() + probe.period_ns / NS_PER_S
        self.log.info("probe missed", claim=key.claim, misses=state.misses, why=why)
        if probe.fail_after and state.misses >= probe.fail_after:
            state.verdict = (False, f"{state.misses} misses in a row; last: {why}")

    def _report(self, key: ProbeKey, state: _Probing) -> None:
        assert state.verdict is not None
        ready, detail = state.verdict
        path, body = claim_report(key, ready, detail)
        try:
            self.api.call("POST", path, dict[str, Any], json=body)
        except ApiError as error:
            if error.status == 0 or error.status >= 500:
                return  # not delivered: the next pass sends it again
            self.log.info("claim report refused", claim=key.claim, error=error.message)
        state.done = True
        self.log.info(
            "claim probed", member=f"{key.group}/{key.member}", claim=key.claim,
            status=body["status"], detail=detail,
        )  # fmt: skip
