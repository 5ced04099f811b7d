"""`costart demo --live`: real processes co-started on this machine (ADR 0044).

The run, in order: `costart serve` on a small cluster file (an LMDB store in the run's
directory, 127.0.0.1, a free port, a tokens file it writes), one `costart agent` per node,
the fake weights download the members' ``weights`` claim probes for, and the RL-like
group (`spec.localize` fits the spec to this run). The demo follows the group's watch
stream and narrates it (`story.Story`); once every task runs it SIGKILLs one rollout
replica (restart-member relaunches it); the trainer finishes, the services are stopped,
the group SUCCEEDED. Every process it started is stopped on the way out, on success,
error or Ctrl-C alike, and a final sweep of the process table kills anything that still
carries the run's marker (`processes`).

Every wait is bounded: a run that does not end by ``timeout_s`` fails, naming the step
it was waiting for and the log file to read.
"""

from __future__ import annotations

import json
import os
import queue
import random
import secrets
import signal
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import msgspec
from rich.console import Console

from costart.cli.live.local import LocalCluster, LocalClusterError
from costart.cli.live.processes import alive
from costart.cli.live.spec import (
    PORT_HIGH,
    PORT_LOW,
    free_port_block,
    install_programs,
    localize,
    probe_files,
)
from costart.cli.live.story import Story
from costart.cli.render import members_table, tasks_table
from costart.projections import GroupView, MemberView
from costart.rest.client import ApiError, Client, WatchEvent

KILLED_MEMBER: Final = "rollout"
KILLED_TASK: Final = 0
TRAINER: Final = "trainer"
KILL_WHEN: Final = "step 2/"  # a line of the trainer's: it trains, and has steps left
POLL_S: Final = 0.1
STOP_GRACE_S: Final = 10.0
STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class DemoFailed(Exception):
    """The run did not go as the demo shows it (the message says where and why)."""


@dataclass(frozen=True)
class LiveOptions:
    spec: Path
    cluster: Path
    repository: Path  # relative paths of the spec are this checkout's
    run_dir: Path
    run: str  # the marker every process of this run carries
    timeout_s: float = 180.0
    download_s: float = 3.0
    interval_s: float = 0.25  # the server's scheduling sessions


class LiveDemo:
    def __init__(self, options: LiveOptions, console: Console) -> None:
        self.options = options
        self.console = console
        self.local = LocalCluster(options.cluster, options.run_dir, options.run, options.interval_s)
        self.story = Story()
        self.starts_dir = options.run_dir / "starts"
        self.submitted: tuple[str, str, str] | None = None  # url, owner token, group

    # --- the run ---------------------------------------------------------------------------

    def run(self) -> None:
        """The whole demo; `DemoFailed` when a step does not happen in time."""
        deadline = time.monotonic() + self.options.timeout_s
        doc = tomllib.loads(self.options.spec.read_text())
        name = str(doc["name"])
        local = self.local
        local.start(deadline)
        url, tokens = local.url, local.tokens
        self.say(f"costart serve on {url} (log: {local.logs['serve']})")
        token_file = owner_token_file(local.run_dir, tokens.owner)
        self.say(f"the board: {url}/")
        self.say(f"  alice's login token: {token_file}")
        self.say(f"{len(local.nodes)} agents, one per node: {', '.join(local.nodes)}")
        taken: set[int] = set()
        start = random.randrange(PORT_LOW, PORT_HIGH - 1000)
        install_programs(doc, self.options.repository, self.options.run_dir)
        spec = localize(doc, self.options.run_dir, lambda n: free_port_block(n, taken, start))
        for index, file in enumerate(probe_files(doc)):
            self._start_download(index, self.options.run_dir / file)
        with Client(url, tokens.owner) as api:
            try:
                api.call(
                    "POST",
                    "/v1/groups",
                    GroupView,
                    content=msgspec.json.encode(spec),
                    headers={"Content-Type": "application/json"},
                )
            except ApiError as error:
                raise DemoFailed(f"submit of {self.options.spec}: {error}") from None
            self.submitted = (url, tokens.owner, name)
            self._follow(url, tokens.owner, name, deadline)
            self._await_no_task_process(deadline)
            members = api.call_list(f"/v1/groups/{name}/members", MemberView)
        self.console.print(members_table(members, with_group=False))
        self.console.print(tasks_table(members, self.story.origin_ns or 0))
        self._check_outcome()

    def say(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)

    # --- processes -------------------------------------------------------------------------

    def _start_download(self, index: int, out: Path) -> None:
        script = self.options.repository / "scenarios" / "live" / "download_weights.py"
        seconds = f"{self.options.download_s:g}"
        argv = [sys.executable, str(script), "--out", str(out), "--seconds", seconds]
        name = f"download-{index}"
        self.local.processes.start(name, argv, self.local.log(name), self.options.run_dir)
        self.say(f"fake weights download started: {out} in {self.options.download_s:g}s")

    def _before(self, deadline: float, waiting_for: str) -> None:
        if time.monotonic() > deadline:
            raise DemoFailed(f"gave up after {self.options.timeout_s:g}s waiting for {waiting_for}")

    # --- the group -------------------------------------------------------------------------

    def _follow(self, url: str, token: str, name: str, deadline: float) -> None:
        """Narrate the group's events until it ends, with the trainer's output once every
        task runs; SIGKILL one rollout replica once the trainer is training."""
        spec_tasks = self._task_total(url, token, name)
        trainer: Tail | None = None
        killed = False
        with _watching(url, token, name) as events:
            while self.story.ended is None:
                self._before(deadline, f"group {name} to end")
                try:
                    item = events.get(timeout=POLL_S * 2.5)
                except queue.Empty:
                    self.local.check_alive()
                    item = None
                if isinstance(item, BaseException):
                    raise DemoFailed(f"the watch stream of {url} failed: {item}")
                if trainer is None and len(self.story.running) == spec_tasks:
                    trainer = Tail(self._task_log(url, token, name, TRAINER, 0))
                # The trainer's lines first: what it printed happened before the events
                # its exit leads to.
                for text in trainer.lines() if trainer is not None else []:
                    self.say(f"    | {text}")
                    if not killed and KILL_WHEN in text:
                        self._kill_one(deadline)
                        killed = True
                line = self.story.line(item) if item is not None else None
                if line is not None:
                    self.say(line)

    def _task_total(self, url: str, token: str, name: str) -> int:
        with Client(url, token) as api:
            members = api.call_list(f"/v1/groups/{name}/members", MemberView)
        return sum(m.desired for m in members)

    def _task_log(self, url: str, token: str, name: str, member: str, task: int) -> Path:
        """Where the agent writes a task's output (the member view says it)."""
        with Client(url, token) as api:
            view = api.call_list(f"/v1/groups/{name}/members", MemberView)
        for row in view:
            for row_task in row.tasks if row.name == member else ():
                if row_task.index == task and row_task.log is not None:
                    return self.options.run_dir / row_task.log  # the agents' work root
        raise DemoFailed(f"the member view of {name} names no log file for {member} task {task}")

    def _kill_one(self, deadline: float) -> None:
        """SIGKILL the running process of rollout task 0, as an operator would."""
        while True:
            live = [r for r in self._killable_records() if alive(int(r["pid"]))]
            if live:
                record = max(live, key=lambda r: int(r["started_ns"]))
                break
            self._before(deadline, f"{KILLED_MEMBER} task {KILLED_TASK} to record its start")
            time.sleep(POLL_S)
        os.kill(int(record["pid"]), signal.SIGKILL)
        self.say(
            f"*** kill -KILL {record['pid']}: {KILLED_MEMBER} task {KILLED_TASK} "
            f"on {record['node']} (attempt {record['attempt']}) ***"
        )

    def _start_records(self) -> list[dict[str, Any]]:
        if not self.starts_dir.exists():
            return []
        return [json.loads(p.read_text()) for p in sorted(self.starts_dir.glob("*.json"))]

    def _killable_records(self) -> list[dict[str, Any]]:
        """The start records of the task the demo kills (one per process)."""
        wanted = (KILLED_MEMBER, KILLED_TASK)
        return [r for r in self._start_records() if (r["member"], r["task"]) == wanted]

    def _await_no_task_process(self, deadline: float) -> None:
        """After the end every task process has exited (the agents stopped the services)."""
        while True:
            records = self._start_records()
            running = [r for r in records if alive(int(r["pid"]))]
            if not running:
                self.say(f"all {len(records)} task processes the agents started have exited")
                return
            self._before(deadline, f"task processes {[r['pid'] for r in running]} to exit")
            time.sleep(POLL_S)

    def _check_outcome(self) -> None:
        story = self.story
        if story.ended != "SUCCEEDED":
            raise DemoFailed(f"the group ended {story.ended}, not SUCCEEDED")
        if len(self._killable_records()) < 2:
            raise DemoFailed(
                f"{KILLED_MEMBER} task {KILLED_TASK} was not relaunched after the kill"
            )

    # --- teardown --------------------------------------------------------------------------

    def stop(self) -> list[int]:
        """Stop every process of the run; the pids a final sweep had to kill. A group
        that has not ended is cancelled first, so the agents tear its tasks down."""
        if self.submitted is not None and self.story.ended is None:
            self._cancel(*self.submitted)
        return self.local.stop(STOP_GRACE_S)

    def _cancel(self, url: str, token: str, name: str) -> None:
        try:
            with Client(url, token, timeout_s=5) as api:
                api.call("POST", f"/v1/groups/{name}/cancel", dict)
        except ApiError as error:
            self.say(f"could not cancel {name} ({error}): the processes are stopped directly")
            return
        self.say(f"group {name} cancelled: the agents stop its tasks")
        try:
            self._await_no_task_process(time.monotonic() + STOP_GRACE_S)
        except DemoFailed as error:
            self.say(str(error))


class Tail:
    """The new whole lines of a file another process appends to (none yet: no file)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def lines(self) -> list[str]:
        try:
            with self.path.open("rb") as file:
                file.seek(self.offset)
                data = file.read()
        except FileNotFoundError:
            return []
        self.offset += len(data)
        *whole, self.partial = (self.partial + data).split(b"\n")
        return [line.decode(errors="replace") for line in whole]


@contextmanager
def _watching(url: str, token: str, name: str) -> Iterator[queue.Queue[WatchEvent | BaseException]]:
    """The group's watch stream (from the log's start) read by a thread into a queue, so
    the reader can keep its own deadline."""
    events: queue.Queue[WatchEvent | BaseException] = queue.Queue()
    client = Client(url, token)

    def pump() -> None:
        try:
            for event in client.watch(after=0, group=name):
                events.put(event)
        except Exception as error:  # the reader reports it, whatever it was
            events.put(error)

    thread = threading.Thread(target=pump, name="costart-demo-watch", daemon=True)
    thread.start()
    try:
        yield events
    finally:
        client.close()


class Interrupts:
    """While active, SIGINT and SIGTERM raise KeyboardInterrupt (so a killed demo cleans
    up like Ctrl-C) and are remembered: an interrupt that lands in a finalizer or a
    callback is swallowed there ("Exception ignored in ..."), and the demo must not then
    run on and end as if nobody had asked it to stop."""

    def __init__(self) -> None:
        self.received: signal.Signals | None = None

    @contextmanager
    def raising(self) -> Iterator[None]:
        def interrupted(signum: int, _frame: object) -> None:
            self.received = signal.Signals(signum)
            raise KeyboardInterrupt(self.received.name)

        previous = {sig: signal.signal(sig, interrupted) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run_live_demo(options: LiveOptions, console: Console) -> bool:
    """Run the demo; True when it went as shown. Cleans up every process either way."""
    try:
        demo = LiveDemo(options, console)
    except LocalClusterError as error:
        console.print(f"live demo failed: {error}", highlight=False, markup=False)
        return False
    ok = False
    interrupts = Interrupts()
    try:
        with interrupts.raising():
            demo.run()
        if interrupts.received is not None:  # it was swallowed on the way
            raise KeyboardInterrupt(interrupts.received.name)
        ok = True
    except (DemoFailed, LocalClusterError, ApiError) as error:
        console.print(f"live demo failed: {error}", highlight=False, markup=False)
    except KeyboardInterrupt:
        console.print("interrupted: stopping every process of the demo", highlight=False)
    finally:
        # A second Ctrl-C (or a SIGTERM) must not cut the cleanup short: it is bounded.
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOP_SIGNALS}
        try:
            left = demo.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if left:
            console.print(f"killed {len(left)} processes left behind: {left}", highlight=False)
        else:
            console.print("every process the demo started has exited", highlight=False)
    return ok


def new_run_marker() -> str:
    return secrets.token_hex(8)


def owner_token_file(run_dir: Path, token: str) -> Path:
    """The owner's token, for logging in to the board, in a file only this user may
    read (the tokens file holds only hashes; the token is never printed)."""
    path = run_dir / "owner-token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    return path
