"""`costart agent`: the reference node agent (docs/design.md §9, ADR 0042).

One loop thread owns every decision, every process start and every report; other
threads only put things on its queue: the watch stream (something changed on our
nodes), process exits, probe verdicts. Each pass reads the tasks of our nodes, asks
`costart.agent.reconcile.plan` what to do, and does it. Reports that cannot reach a
server stay pending and are sent again on the next pass (they are idempotent).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, NamedTuple
from urllib.parse import quote

import msgspec
import structlog

from costart.agent import leftovers, log_reads, proctable, reconcile
from costart.agent.accounts import Accounts
from costart.agent.cgroups import TaskCgroups
from costart.agent.confine import Escape
from costart.agent.launch import NodeRules, account_and_env, prepare, working_dir
from costart.agent.ledger import LaunchRecord, Ledger
from costart.agent.model import Exit, NodeTask, Refused, TaskKey
from costart.agent.probe_selection import MembersPerPass, ProbeKey, claim_report, wanted_probes
from costart.agent.probe_targets import AllowRule, TargetPolicy, group_addresses
from costart.agent.probes import ProbeLoop, TaskDir
from costart.agent.processes import Supervised, classify, spawn, stop, watch_exit
from costart.agent.secrets import Secrets
from costart.rest.client import ApiError, Client
from costart.rest.log_wire import LOG_BATCH_BYTES, LOG_MAX_PIECES, LogPiece, LogPieces, LogRead

log = structlog.get_logger("costart.agent")
NS_PER_S: Final = 1e9
STOP_WAIT_S: Final = 5.0
LOST_REASON: Final = "node-lost"
LOG_POLL_S: Final = 20.0  # the log reads' long poll (the server answers at once when asked)


@dataclass(frozen=True)
class AgentConfig:
    servers: tuple[str, ...]
    token: str
    nodes: tuple[str, ...]
    work_dir: Path
    state_dir: Path
    peer_hosts: Mapping[str, str] = field(default_factory=dict)
    default_host: str | None = None
    resync_s: float = 2.0
    heartbeat_s: float = 5.0
    failover_s: float = 30.0
    ca_file: Path | None = None
    cgroup_root: Path | None = None
    accounts: Accounts = field(default_factory=lambda: Accounts({}))
    """Which OS account runs each owner's tasks (an empty table refuses every owner)."""
    secrets_dir: Path | None = None
    allowed_env: frozenset[str] = frozenset()
    """Names that change how programs load, allowed on shared accounts all the same."""
    probe_allow: tuple[AllowRule, ...] = ()
    """Where http and tcp probes may connect besides their group's member addresses."""

    def host_of(self, node: str) -> str:
        """The address peers reach ``node`` at: ``--peer-host NODE=HOST``, else the
        default ``--peer-host HOST``, else the node's name."""
        return self.peer_hosts.get(node, self.default_host or node)


class _Exited(NamedTuple):
    process: Supervised
    code: int


class _Probed(NamedTuple):
    key: ProbeKey
    ready: bool
    detail: str


class _Changed(NamedTuple):
    position: int


def _q(text: str) -> str:
    return quote(text, safe="")


class Agent:
    def __init__(self, config: AgentConfig, client: Callable[[], Client] | None = None) -> None:
        self.config = config
        self._client = client or self._new_client
        self.api = self._client()
        self.ledger = Ledger(config.state_dir)
        self.cgroups = TaskCgroups(config.cgroup_root)
        self.rules = NodeRules(
            work_dir=config.work_dir,
            accounts=config.accounts,
            secrets=Secrets(config.secrets_dir),
            allowed_env=config.allowed_env,
            host_of=config.host_of,
        )
        self.log = log.bind(nodes=",".join(config.nodes))
        self.events: queue.Queue[_Exited | _Probed | _Changed] = queue.Queue()
        self.procs: dict[TaskKey, Supervised] = {}
        self.tasks: dict[TaskKey, NodeTask] = {}
        self.launched_now: set[TaskKey] = set()
        self.launched_before: set[TaskKey] = set()
        self.unstarted: dict[TaskKey, NodeTask] = {}  # started, report not yet accepted
        self.exits: dict[TaskKey, tuple[NodeTask, Exit]] = {}  # ended, report pending
        self.claims: dict[ProbeKey, tuple[bool, str]] = {}  # probed, report pending
        self.probes: dict[ProbeKey, ProbeLoop] = {}
        self.grace_s: dict[TaskKey, float] = {}
        self.position = 0
        self._warned: set[str] = set()

    def _new_client(self) -> Client:
        config = self.config
        return Client(
            config.servers, config.token, ca_file=config.ca_file, failover_s=config.failover_s
        )

    # --- the loop ----------------------------------------------------------------------

    def run(self, stopping: threading.Event) -> None:
        """Until ``stopping`` is set; then stop every task (grace, then SIGKILL)."""
        self._adopt_leftovers()
        self.position = self.api.call("GET", "/healthz", dict[str, Any])["position"]
        threading.Thread(target=self._watch, args=(stopping,), name="watch", daemon=True).start()
        threading.Thread(target=self._beat, args=(stopping,), name="beat", daemon=True).start()
        for node in self.config.nodes:
            threading.Thread(
                target=self._relay_logs, args=(stopping, node), name=f"logs-{node}", daemon=True
            ).start()
        self.log.info("agent running", servers=",".join(self.config.servers))
        while not stopping.is_set():
            self._drain(timeout_s=self.config.resync_s)
            try:
                self.reconcile()
            except ApiError as error:
                self.log.warning("cannot reach the server; retrying", error=str(error))
        self.shutdown()

    def _drain(self, timeout_s: float) -> None:
        try:
            item = self.events.get(timeout=timeout_s)
        except queue.Empty:
            return
        while True:
            if isinstance(item, _Exited):
                self._on_exit(item.process, item.code)
            elif isinstance(item, _Probed):
                self.claims[item.key] = (item.ready, item.detail)
                self.probes.pop(item.key, None)
            try:
                item = self.events.get_nowait()
            except queue.Empty:
                return

    def reconcile(self) -> None:
        """One pass: send pending reports, read our nodes' tasks, act on the plan."""
        self._flush()
        desired: list[NodeTask] = []
        for node in self.config.nodes:
            desired += self.api.call("GET", f"/v1/nodes/{_q(node)}/tasks", list[NodeTask])
        for task in desired:
            self.tasks[task.key] = task
        plan = reconcile.plan(
            desired, set(self.procs), self.launched_now, self.launched_before, set(self.exits)
        )
        for key in plan.stop:
            self._stop(key, "its task left the node or ended on the server")
        members = MembersPerPass(self.api)
        for task in plan.start:
            self._start(task, members)
        for task, why in plan.lost:
            self._report_lost(task, why)
        for key in plan.forget:
            self.ledger.remove(key)
            self.launched_now.discard(key)
            self.launched_before.discard(key)
            self.tasks.pop(key, None)
        self._sync_probes(desired, members)
        self._flush()
        if self.procs:
            table = list(proctable.processes())
            for process in self.procs.values():
                process.track(table)

    def shutdown(self) -> None:
        for key in sorted(self.procs):
            self._stop(key, "the agent is stopping")
        for process in list(self.procs.values()):
            process.exited.wait(self.grace_s.get(process.key, 0.0) + STOP_WAIT_S)
        for loop in self.probes.values():
            loop.cancel()
        self.api.close()
        self.log.info("agent stopped")

    # --- starting and stopping ---------------------------------------------------------

    def _adopt_leftovers(self) -> None:
        """A previous agent on this state directory launched these runs: kill what is
        left of them (it cannot be supervised), and never launch them again. Only a
        process that is still the recorded run is killed (`leftovers.mismatch`)."""
        for record in self.ledger.records():
            self.launched_before.add(record.key)
            if record.pid is None or proctable.read_proc(record.pid) is None:
                continue  # nothing of it runs at that pid (it died with the previous agent)
            why = leftovers.mismatch(record)
            if why is not None:
                self.log.warning(
                    "a record of the previous agent does not name its task's process: "
                    "killed nothing",
                    record=record.key.file_name(),
                    task=record.ref,
                    pid=record.pid,
                    mismatch=why,
                )
                continue
            pids = proctable.tree(record.pid, record.pid)
            proctable.signal_all(pids, signal.SIGKILL)
            self.log.warning(
                "killed a task left by the previous agent", task=record.ref, pids=len(pids)
            )

    def _start(self, task: NodeTask, members: MembersPerPass) -> None:
        rows = members.of(task.group)
        member = next((m for m in rows if m.name == task.member), None)
        if member is None or member.run is None:
            self._warn_once(f"{task.group}/{task.member}", "no run table: left to another runner")
            return
        own = next((t for t in member.tasks if t.index == task.task), None)
        if own is not None and any(status != "READY" for status in own.claims.values()):
            return  # a relaunched or added task waits for its own claims (probed below)
        run = member.run
        if run.env_withheld:
            # The server no longer counts this group as ours (its task left our nodes
            # between two reads): never start a task with values it would not give us.
            self._warn_once(f"{task.group}/{task.member}", "env withheld: not started")
            return
        key = task.key
        record = LaunchRecord(*key, ref=task.ref)
        self.ledger.write(record)  # before the start: a crash never launches it twice
        self.launched_now.add(key)
        try:
            launch = prepare(self.rules, task, member, rows, os.environ)
        except (Refused, Escape) as refusal:
            self.log.warning("task refused on this node", task=task.ref, why=str(refusal))
            self.exits[key] = (task, Exit("exited", None, "refused", str(refusal)))
            return
        try:
            process = spawn(
                key,
                task.kind,
                run.argv,
                launch.env,
                launch.cwd_fd,
                launch.log_fd,
                self.cgroups.create(key),
                launch.account,
            )
        except OSError as error:
            self.log.warning("task could not start", task=task.ref, error=str(error))
            self.exits[key] = (task, Exit("exited", 127, "error", f"could not start: {error}"))
            return
        except subprocess.SubprocessError:
            where = working_dir(run)
            why = f"{launch.account.describe()} cannot enter its directory {where!r}"
            self.log.warning("task refused on this node", task=task.ref, why=why)
            self.exits[key] = (task, Exit("exited", None, "refused", why))
            return
        finally:
            launch.close()
        log_path = launch.log_path
        proc = proctable.read_proc(process.pid)
        self.ledger.write(
            LaunchRecord(
                *key,
                ref=task.ref,
                pid=process.pid,
                start_ticks=proc.start_ticks if proc else None,
                uid=launch.account.uid,  # checked before a restarted agent kills it
            )
        )
        self.procs[key] = process
        self.grace_s[key] = run.grace_ns / NS_PER_S
        self.unstarted[key] = task
        self.log.info(
            "task started",
            task=task.ref,
            attempt=task.task_attempt,
            pid=process.pid,
            account=launch.account.describe(),
            log=log_path,
        )
        watch_exit(process, lambda p, code: self.events.put(_Exited(p, code)))

    def _stop(self, key: TaskKey, why: str) -> None:
        process = self.procs.get(key)
        if process is None or process.stopping:
            return
        self.unstarted.pop(key, None)
        grace_s = self.grace_s.get(key, 0.0)
        self.log.info("stopping task", task=str(key), why=why, grace_s=grace_s)
        stop(process, grace_s)

    def _on_exit(self, process: Supervised, code: int) -> None:
        key = process.key
        self.procs.pop(key, None)
        oom_kills = TaskCgroups.oom_kills(process.cgroup)
        TaskCgroups.remove(process.cgroup)
        if process.stopping:
            self.log.info("task stopped", task=str(key), code=code)
            return
        task = self.tasks[key]
        ended = classify(process.kind, code, oom_kills)
        self.log.info(
            "task ended", task=task.ref, code=code, outcome=ended.event, reason=ended.reason
        )
        self.exits[key] = (task, ended)

    # --- reports -----------------------------------------------------------------------

    def _flush(self) -> None:
        """Send what is pending: starts before exits (a task's exit needs its start)."""
        for key, task in list(self.unstarted.items()):
            sent, refused = self._report_task(
                task, {"attempt": task.task_attempt, "event": "started"}
            )
            if sent:
                del self.unstarted[key]
            if refused:
                self._stop(key, "the server refused its start")
        for key, (task, ended) in list(self.exits.items()):
            if key in self.unstarted:
                continue
            body: dict[str, Any] = {"attempt": task.task_attempt, "event": ended.event}
            if ended.event == "exited":
                body |= {"exit_code": ended.exit_code, "reason": ended.reason, "note": ended.note}
            if self._report_task(task, body)[0]:
                del self.exits[key]
        for probed, (ready, detail) in list(self.claims.items()):
            path, claim = claim_report(probed, ready, detail)
            if self._send(path, claim, f"claim {probed.claim}")[0]:
                del self.claims[probed]

    def _report_lost(self, task: NodeTask, why: str) -> None:
        note = f"lost on node {task.node}: {why}"
        self.log.warning("reporting a task lost", task=task.ref, why=why)
        body = {
            "attempt": task.task_attempt,
            "event": "exited",
            "reason": LOST_REASON,
            "note": note,
        }
        self._report_task(task, body)

    def _report_task(self, task: NodeTask, body: dict[str, Any]) -> tuple[bool, bool]:
        path = f"/v1/groups/{_q(task.group)}/members/{_q(task.member)}/tasks/{task.task}"
        return self._send(path, body, f"task {task.ref} {body['event']}")

    def _send(self, path: str, body: dict[str, Any], what: str) -> tuple[bool, bool]:
        """(settled, refused): settled unless the server could not be reached (then the
        report stays pending); refused when it answered 4xx (stale, gone or illegal)."""
        try:
            self.api.call("POST", path, dict[str, Any], json=body)
        except ApiError as error:
            if error.status == 0 or error.status >= 500:
                self.log.warning("report not delivered; will retry", what=what, error=str(error))
                return False, False
            self.log.info("report refused", what=what, status=error.status, error=error.message)
            return True, True
        return True, False

    # --- probes ------------------------------------------------------------------------

    def _sync_probes(self, desired: Sequence[NodeTask], members: MembersPerPass) -> None:
        wanted = wanted_probes(desired, members, set(self.config.nodes))
        for key in [k for k in self.probes if k not in wanted]:
            self.probes.pop(key).cancel()
        for key, (member, task) in wanted.items():
            if key in self.probes or key in self.claims or member.run is None:
                continue
            probe = member.run.probe(key.claim)
            assert probe is not None
            rows = members.of(task.group)
            try:  # the task's account and environment: its probes get no more
                account, env = account_and_env(self.rules, task, member, rows, os.environ)
            except Refused as refusal:  # the task could never start here: nor may its probe
                self.log.warning("probe refused on this node", claim=key.claim, why=str(refusal))
                self.claims[key] = (False, str(refusal))
                continue
            task_dir = TaskDir(self.config.work_dir, working_dir(member.run))
            targets = TargetPolicy(
                self.config.probe_allow, group_addresses(rows, self.config.host_of)
            )

            def verdict(ready: bool, detail: str, key: ProbeKey = key) -> None:
                self.events.put(_Probed(key, ready, detail))

            loop = ProbeLoop(probe, task_dir, env, verdict, account=account, targets=targets)
            self.probes[key] = loop
            self.log.info(
                "probing claim",
                member=f"{key.group}/{key.member}",
                claim=key.claim,
                kind=probe.kind,
            )
            loop.start()

    # --- background threads ------------------------------------------------------------

    def _watch(self, stopping: threading.Event) -> None:
        """Every event on our nodes wakes the loop (the watch resumes by position)."""
        client = self._client()
        after = self.position
        while not stopping.is_set():
            try:
                for event in client.watch(after=after, nodes=self.config.nodes):
                    after = event.position
                    self.events.put(_Changed(after))
                    if stopping.is_set():
                        return
            except Exception as error:  # the watch must outlive any failure
                self.log.warning("watch interrupted; resuming", error=str(error), after=after)
                stopping.wait(1.0)

    def _beat(self, stopping: threading.Event) -> None:
        client = self._client()
        while not stopping.is_set():
            for node in self.config.nodes:
                try:
                    client.call("POST", f"/v1/nodes/{_q(node)}/heartbeat", dict[str, Any])
                except ApiError as error:
                    self.log.warning("heartbeat failed", node=node, error=str(error))
            stopping.wait(self.config.heartbeat_s)

    def _relay_logs(self, stopping: threading.Event, node: str) -> None:
        """Answer the reads callers wait on (ADR 0084): long-poll the server for them over
        our own connection (the agent listens on no port), read each file safely and post
        what was read. Only reads; every decision stays with the loop thread."""
        client = self._client()
        path = f"/v1/nodes/{_q(node)}/log-reads"
        while not stopping.is_set():
            try:
                reads = client.call("GET", path, list[LogRead], params={"wait": str(LOG_POLL_S)})
                for batch in _batches([self._read_log(read) for read in reads]):
                    client.call(
                        "POST",
                        path,
                        dict[str, Any],
                        content=msgspec.json.encode(LogPieces(pieces=batch)),
                        headers={"Content-Type": "application/json"},
                    )
            except Exception as error:  # the relay must outlive any failure
                self.log.warning("log reads interrupted; resuming", node=node, error=str(error))
                stopping.wait(1.0)

    def _read_log(self, read: LogRead) -> LogPiece:
        key = TaskKey(read.group_id, read.member, read.task, read.attempt)
        running = key in self.procs  # a dict lookup: the loop thread owns the dict
        return log_reads.answer(
            self.config.work_dir,
            read,
            lambda owner: self.rules.accounts.resolve(owner).uid,
            running,
        )

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            self.log.warning(message, member=what)


def _batches(pieces: list[LogPiece]) -> list[list[LogPiece]]:
    """The pieces in posts of at most `LOG_BATCH_BYTES` of output (and `LOG_MAX_PIECES`)."""
    batches: list[list[LogPiece]] = []
    size = 0
    for piece in pieces:
        if (
            not batches
            or size + len(piece.data) > LOG_BATCH_BYTES
            or len(batches[-1]) >= LOG_MAX_PIECES
        ):
            batches.append([])
            size = 0
        batches[-1].append(piece)
        size += len(piece.data) * 3 // 4  # the bytes its base64 text carries
    return batches
