"""`costart slurm`: costart's groups run as Slurm jobs (ADR 0096).

Speaks to `costart serve` over the same contract as a node agent, for every Slurm node
it fronts: it reads each node's placed tasks (with ``may_start``, the barrier's word),
and reports each task's start and end with its attempt. Each pass (level-triggered: a
missed change only waits for the next pass):

- a task placed and not yet submitted becomes a *held* job pinned to its node with its
  placed shape, under its owner's mapped account (`sbatch --hold --nodelist --uid`); a
  refused submission is the task's failure with reason ``refused`` (costart re-plans);
- once ``may_start`` (the barrier opened) its job is released (`scontrol release`);
- a job that runs is reported started; one that ended is reported with its outcome
  (`costart.adapters.slurm.jobs`); a running task with no job is reported lost;
- a job whose task left its node or ended on the server (a cancel, a restart with a
  newer attempt, a group that ended) is cancelled (`scancel`); a restarted task's next
  attempt is a new job;
- a claim whose probe is ``exec`` or ``file`` is probed by short Slurm jobs on the
  task's node (`costart.adapters.slurm.probe_jobs`), their end its READY or FAILED;
- a node Slurm drains is reported drained, and up again once Slurm resumes it; a node
  Slurm has down gets no heartbeat (the server marks it down after its timeout);
- a node where Slurm offers less than `serve`'s cluster view of it (``GET
  /v1/nodes/{node}``: fewer GPUs, CPUs or memory, another GPU type), or that Slurm no
  longer has, is reported drained with the mismatch as its note (ADR 0120); a Slurm node
  the adapter does not front is logged once (placing there takes a new cluster file);
- a job costart did not submit is outside load: what it holds on each node is reported
  to `serve` every pass (``PUT /v1/nodes/{node}/outside-load``, ADR 0118), whose
  placement counts it out of the node's free capacity; one named as costart's that this
  adapter has no record of is outside load too, reported in its log and never adopted
  or cancelled.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import structlog

from costart.adapters.slurm.cluster_view import ViewedNode, shortfall, surplus
from costart.adapters.slurm.commands import Slurm, SlurmCommandError
from costart.adapters.slurm.identity import JobIdentity
from costart.adapters.slurm.jobs import Outcome, SlurmJob
from costart.adapters.slurm.ledger import JobLedger
from costart.adapters.slurm.nodes import SlurmNode
from costart.adapters.slurm.probe_jobs import SlurmProbes
from costart.adapters.slurm.submission import batch_script, sbatch_options
from costart.agent.accounts import Accounts
from costart.agent.model import NodeTask, Refused
from costart.agent.probe_selection import MembersPerPass, wanted_probes
from costart.domain.capacity import Capacity
from costart.projections import HoldView
from costart.rest.client import ApiError, Client

log = structlog.get_logger("costart.slurm")
LIVE: Final = frozenset({"PLACED", "RUNNING"})


def _q(text: str) -> str:
    return quote(text, safe="")


def identity_of(task: NodeTask) -> JobIdentity:
    return JobIdentity(task.group_id, task.member, task.task, task.task_attempt)


@dataclass(frozen=True)
class SlurmConfig:
    nodes: tuple[str, ...]
    state_dir: Path
    accounts: Accounts
    partition: str | None = None
    output_dir: Path | None = None
    poll_s: float = 1.0


@dataclass
class Reading:
    """One pass's reading of Slurm."""

    nodes: dict[str, SlurmNode]  # the fronted nodes Slurm has
    others: tuple[str, ...]  # the nodes Slurm has that the adapter does not front
    ours: dict[JobIdentity, SlurmJob]
    outside: list[SlurmJob]
    unknown: list[SlurmJob]

    def outside_use(self) -> dict[str, Capacity]:
        """What jobs costart did not submit hold on each node (single-node jobs)."""
        use: dict[str, Capacity] = {}
        for job in self.outside + self.unknown:
            if job.phase == "running" and job.nodes in self.nodes:
                a, b = use.get(job.nodes, Capacity()), job.allocated
                use[job.nodes] = Capacity(a.gpu + b.gpu, a.cpu + b.cpu, a.mem_gb + b.mem_gb)
        return use


@dataclass
class SlurmAdapter:
    config: SlurmConfig
    api: Client
    slurm: Slurm
    ledger: JobLedger = field(init=False)
    reported: set[tuple[JobIdentity, str]] = field(default_factory=set)
    node_status: dict[str, tuple[str, str]] = field(default_factory=dict)  # status, note
    said: dict[str, str] = field(default_factory=dict)  # last logged per node or listing
    no_view_route: bool = False  # the server describes no nodes (409)
    outside: dict[str, Capacity] = field(default_factory=dict)  # last reported per node
    no_outside_route: bool = False  # the server answered 409: it takes none
    warned: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.ledger = JobLedger(self.config.state_dir)
        self.probes = SlurmProbes(
            self.slurm, self.api, self.config.accounts, partition=self.config.partition
        )
        self.log = log.bind(nodes=",".join(self.config.nodes))

    def run(self, stopping: threading.Event) -> None:
        self.log.info("slurm adapter running", jobs_known=len(self.ledger.entries))
        while not stopping.is_set():
            try:
                self.step()
            except (ApiError, SlurmCommandError) as error:
                self.log.warning("pass failed; retrying", error=str(error))
            stopping.wait(self.config.poll_s)
        self.api.close()

    # --- one pass ----------------------------------------------------------------------

    def read(self) -> Reading:
        listed = self.slurm.nodes()
        nodes = {n.name: n for n in listed if n.name in self.config.nodes}
        others = tuple(sorted(n.name for n in listed if n.name not in self.config.nodes))
        ours: dict[JobIdentity, SlurmJob] = {}
        outside: list[SlurmJob] = []
        unknown: list[SlurmJob] = []
        for job in sorted(self.slurm.jobs(), key=lambda j: j.job_id):
            identity = job.identity
            if identity is None:
                outside.append(job)
            elif self.ledger.job_id(identity) == job.job_id:
                ours[identity] = job
            elif identity in self.ledger and self.ledger.job_id(identity) is None:
                # Submitted by a predecessor that died before recording the id.
                self.ledger.record(identity, job.job_id)
                ours[identity] = job
            else:
                unknown.append(job)
        return Reading(nodes, others, ours, outside, unknown)

    def step(self) -> None:
        reading = self.read()
        self._nodes(reading)
        desired: list[NodeTask] = []
        for node in self.config.nodes:
            desired += self.api.call("GET", f"/v1/nodes/{_q(node)}/tasks", list[NodeTask])
        live = {identity_of(t): t for t in desired if t.task_state in LIVE}
        members = MembersPerPass(self.api)
        shapes: dict[tuple[str, str, int], HoldView] | None = None
        for identity, task in live.items():
            job = reading.ours.get(identity)
            if job is None:
                if task.task_state == "RUNNING":
                    self._report_lost(task, identity)
                    continue
                if shapes is None:
                    shapes = {
                        (h.group_id, h.member, h.index): h
                        for h in self.api.call_list("/v1/holds", HoldView)
                        if h.kind == "used"
                    }
                self._submit(task, identity, members, shapes)
                continue
            self._follow(task, identity, job)
        self._cancel_departed(reading, live)
        self._report_unknown(reading)
        wanted = wanted_probes(desired, members, self.config.nodes)
        self.probes.sync(wanted, {job.job_id: job for job in reading.outside})

    def _nodes(self, reading: Reading) -> None:
        outside = reading.outside_use()
        self._say("", ", ".join(reading.others), "Slurm nodes costart does not place on")
        for name in self.config.nodes:
            node = reading.nodes.get(name)
            view = self._view(name)
            mismatch = shortfall(name, node, view) if view is not None else ""
            if node is not None and view is not None:
                self._say(name, surplus(node, view), "Slurm offers more than the cluster file")
            if node is None or node.status == "down":
                if mismatch:  # Slurm no longer has it: drained now, down by silence later
                    self._status(name, "drained", mismatch, view, "gone")
                continue  # no heartbeat: the server marks it down after its timeout
            self.api.call("POST", f"/v1/nodes/{_q(name)}/heartbeat", dict[str, Any])
            # Every pass, changed or not: a server that restarted (or a new leader) holds
            # none of it (ADR 0118).
            use = outside.get(name, Capacity())
            self._report_outside(name, use)
            if self.outside.get(name, Capacity()) != use:
                self.log.info(
                    "outside Slurm load", node=name, gpu=use.gpu, cpu=use.cpu, mem_gb=use.mem_gb
                )  # fmt: skip
                self.outside[name] = use
            status = "drained" if mismatch else node.status
            self._status(name, status, mismatch, view, node.state)

    def _status(
        self, name: str, status: str, note: str, view: ViewedNode | None, slurm: str
    ) -> None:
        """Report ``status`` (with ``note``) when it changed, or when the server holds
        the node up while it should be drained (a server that restarted forgot it)."""
        lost = view is not None and status == "drained" and view.status == "up"
        if self.node_status.get(name) == (status, note) and not lost:
            return
        body: dict[str, Any] = {"status": status}
        if note:
            body["note"] = note
        self.api.call("PUT", f"/v1/nodes/{_q(name)}/status", dict[str, Any], json=body)
        if self.node_status.get(name) != (status, note):
            self.log.info("node status", node=name, status=status, slurm=slurm, reason=note)
        self.node_status[name] = (status, note)

    def _view(self, name: str) -> ViewedNode | None:
        """`serve`'s view of node ``name`` (None from a server that describes none)."""
        try:
            return self.api.call("GET", f"/v1/nodes/{_q(name)}", ViewedNode)
        except ApiError as error:
            if error.status != 409:
                raise
            if not self.no_view_route:
                self.log.warning("the server describes no nodes", error=error.message)
            self.no_view_route = True
            return None

    def _say(self, key: str, text: str, what: str) -> None:
        """Log ``what: text`` once per change of ``text`` (nothing while it is empty)."""
        if self.said.get(key, "") != text and text:
            self.log.warning(what, node=key or None, detail=text)
        self.said[key] = text

    def _report_outside(self, node: str, use: Capacity) -> None:
        body = {"gpu": use.gpu, "cpu": use.cpu, "mem_gb": use.mem_gb, "source": "slurm"}
        try:
            self.api.call("PUT", f"/v1/nodes/{_q(node)}/outside-load", dict[str, Any], json=body)
        except ApiError as error:
            if error.status != 409:
                raise
            # A server whose placement takes no outside load: say so once, go on without.
            if not self.no_outside_route:
                self.log.warning("the server takes no outside load", error=error.message)
            self.no_outside_route = True

    def _submit(
        self,
        task: NodeTask,
        identity: JobIdentity,
        members: MembersPerPass,
        shapes: dict[tuple[str, str, int], HoldView],
    ) -> None:
        member = members.member(task.group, task.member)
        hold = shapes.get((task.group_id, task.member, task.task))
        if member is None or member.run is None or hold is None:
            return  # not readable yet, or no run table: another runner's
        if member.run.env_withheld:
            return  # the server does not count this task ours (yet): never submit blind
        try:
            account = self.config.accounts.resolve(task.owner or member.owner)
            script = batch_script(member.run, task)
        except Refused as refusal:
            self._report(task, identity, "exited", reason="refused", note=str(refusal))
            return
        output = (
            str(self.config.output_dir / f"{identity.job_name()}.out")
            if self.config.output_dir
            else "/dev/null"
        )
        shape = Capacity(hold.gpu, hold.cpu, hold.mem_gb)
        options = sbatch_options(
            identity, task.node, shape, account, output=output,
            partition=self.config.partition, slurm=member.run.slurm,
        )  # fmt: skip
        self.ledger.record(identity, None)  # before sbatch: a restart finds it by name
        try:
            job_id = self.slurm.submit(options, script)
        except SlurmCommandError as error:
            self.ledger.forget(identity)
            self.log.warning("submission refused", task=task.ref, error=str(error))
            self._report(task, identity, "exited", reason="refused", note=str(error)[:500])
            return
        self.ledger.record(identity, job_id)
        self.log.info(
            "task submitted held", task=task.ref, attempt=task.task_attempt, job=job_id,
            node=task.node, account=account.describe(),
        )  # fmt: skip

    def _follow(self, task: NodeTask, identity: JobIdentity, job: SlurmJob) -> None:
        if job.phase == "waiting":
            if job.held and task.may_start:
                self.slurm.release(job.job_id)
                self.log.info("barrier open: job released", task=task.ref, job=job.job_id)
            return
        if job.phase == "running" or job.nodes:
            self._report(task, identity, "started")
        if job.phase == "ended":
            ended: Outcome = job.outcome()
            self._report(
                task, identity, ended.event, code=ended.exit_code, reason=ended.reason,
                note=ended.note,
            )  # fmt: skip

    def _cancel_departed(self, reading: Reading, live: dict[JobIdentity, NodeTask]) -> None:
        for identity, job in reading.ours.items():
            if identity in live:
                continue
            if job.phase != "ended":
                self.slurm.cancel(job.job_id)
                self.log.info(
                    "task left its node or ended: job cancelled", job=job.job_id,
                    task=f"{identity.member}/{identity.task}", attempt=identity.attempt,
                )  # fmt: skip
        for identity in [i for i in self.ledger.entries if i not in live]:
            gone = reading.ours.get(identity)
            if gone is not None and gone.phase == "ended":
                self.ledger.forget(identity)
                self.reported -= {(identity, "started"), (identity, "exited")}
                self.reported -= {(identity, "succeeded")}

    def _report_unknown(self, reading: Reading) -> None:
        for job in reading.unknown:
            if job.job_id not in self.warned and job.phase != "ended":
                self.warned.add(job.job_id)
                self.log.warning(
                    "a Slurm job named as costart's that this adapter did not submit: "
                    "left alone (never adopted, never cancelled)",
                    job=job.job_id, name=job.name, state=job.state,
                )  # fmt: skip

    # --- reports -----------------------------------------------------------------------

    def _report_lost(self, task: NodeTask, identity: JobIdentity) -> None:
        note = f"lost on node {task.node}: no Slurm job runs it"
        self._report(task, identity, "exited", reason="node-lost", note=note)

    def _report(
        self,
        task: NodeTask,
        identity: JobIdentity,
        event: str,
        *,
        code: int | None = None,
        reason: str | None = None,
        note: str | None = None,
    ) -> None:
        if (identity, event) in self.reported:
            return
        body: dict[str, Any] = {"attempt": task.task_attempt, "event": event}
        if event == "exited":
            body |= {"exit_code": code, "reason": reason, "note": note}
        path = f"/v1/groups/{_q(task.group)}/members/{_q(task.member)}/tasks/{task.task}"
        try:
            self.api.call("POST", path, dict[str, Any], json=body)
        except ApiError as error:
            if error.status == 0 or error.status >= 500:
                raise
            self.log.info("report refused", task=task.ref, report=event, error=error.message)
        self.reported.add((identity, event))
        self.log.info("task reported", task=task.ref, attempt=task.task_attempt, report=event)
