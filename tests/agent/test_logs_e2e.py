"""`costart logs`, end to end (ADR 0084): a real `costart serve` on 127.0.0.1 and a real
`costart agent` running real task programs (`tests/agent/log_program.py`), read through
the CLI and `costart.client` as the group's owner, another owner, and no one.

Shown here: `logs` prints the task's output and `--tail` its last lines; `logs -f`
prints new lines as they come, follows a SIGKILLed task into its next attempt, and ends
when the group does; `--attempt` picks an earlier attempt; another owner gets 403 (exit
6) and no token 401; a task that swaps its log for a link to a file it must not hand out
gets nothing of that file; a large log comes in bounded chunks that add up to the file;
and no output ever enters the store.
"""

from __future__ import annotations

import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from costart.rest.client import ApiError, Client
from costart.rest.log_wire import LOG_PIECE_BYTES
from tests.agent.harness import (
    ADMIN,
    Agent,
    Serve,
    agent_token,
    child_env,
    kill_group_leftovers,
    wait_until,
    write_files,
)

ALICE = "alice-owner-token-0123456789"
BOB = "bob-owner-token-0123456789ab"
NODES = ("n1", "n2", "n3", "n4")
PROGRAM = Path(__file__).with_name("log_program.py")
ROOT = Path(__file__).resolve().parents[2]


class Relay:
    """One serve and one agent for every node; alice owns the groups, bob does not."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        write_files(directory, [NODES])
        owners = (
            f'[tokens.{ALICE}]\nuser = "alice"\nrole = "owner"\n'
            f'[tokens.{BOB}]\nuser = "bob"\nrole = "owner"\n'
        )
        tokens = directory / "tokens.toml"
        tokens.write_text(tokens.read_text().replace('user = "alice"', 'user = "root"') + owners)
        self.serve = Serve(directory, "serve")
        self.serve.wait_serving()
        self.agent = Agent(directory, [self.serve.url], NODES)
        self.agent.wait_running()
        self.control = directory / "work" / "control"
        self.control.mkdir(parents=True)
        self.alice = Client(self.serve.url, ALICE)
        self.admin = Client(self.serve.url, ADMIN)
        self.victim = directory / "agent-only-secret"
        self.secret = "victim-" + secrets.token_hex(16)
        self.victim.write_text(self.secret + "\n")
        self.victim.chmod(0o600)
        self.gids: list[str] = []

    def submit(
        self,
        name: str,
        *args: str,
        failure: dict[str, Any] | None = None,
        tasks: int = 1,
        owner: str = "alice",
    ) -> str:
        control = self.control / name
        control.mkdir()
        spec = {
            "name": name,
            "owner": owner,
            "failure": failure or {"default": "fail-group"},
            "members": [
                {
                    "name": "main",
                    "kind": "job",
                    "tasks": tasks,
                    "shape": {"cpu": 1},
                    "run": {
                        "argv": [sys.executable, "-u", str(PROGRAM), str(control), *args],
                        "grace": "1s",
                    },
                }
            ],
        }
        with Client(self.serve.url, ALICE if owner == "alice" else BOB) as api:
            gid = str(api.call("POST", "/v1/groups", dict[str, Any], json=spec)["id"])
        self.gids.append(gid)
        return gid

    def state(self, name: str) -> str:
        return str(self.alice.call("GET", f"/v1/groups/{name}", dict[str, Any])["group"]["state"])

    def wait_started(self, name: str, attempt: int = 1, task: int = 0) -> int:
        """The pid of the group's task's ``attempt`` once it runs."""
        pid_file = self.control / name / f"pid-main-{task}-{attempt}"
        wait_until(
            lambda: pid_file.exists() and pid_file.read_text(),
            90,
            lambda: f"{name} attempt {attempt} started\n{self.agent.tail()}",
        )
        return int(pid_file.read_text())

    def cli(self, *args: str, token: str | None = ALICE, timeout_s: float = 60) -> Any:
        command = [sys.executable, "-m", "costart.cli.main", "--server", self.serve.url]
        if token is not None:
            command += ["--token", token]
        return subprocess.run(
            [*command, "logs", *args],
            check=False,
            capture_output=True,
            text=True,
            env=child_env(),
            cwd=ROOT,
            timeout=timeout_s,
        )

    def close(self) -> None:
        self.agent.stop()
        self.serve.stop()
        self.alice.close()
        self.admin.close()
        for gid in self.gids:
            kill_group_leftovers(gid)


@pytest.fixture(scope="module")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Relay]:
    running = Relay(tmp_path_factory.mktemp("logs-e2e"))
    try:
        yield running
    finally:
        running.close()


def lines(count: int, attempt: int = 1) -> str:
    return "".join(f"attempt {attempt} line {i}\n" for i in range(1, count + 1))


def test_logs_prints_the_tasks_output_and_its_tail(relay: Relay) -> None:
    relay.submit("chat", "5")
    relay.wait_started("chat")
    wait_until(lambda: relay.cli("chat").stdout == lines(5), 30, "the five lines relayed")
    for target in ("chat/main", "chat/main/0"):
        done = relay.cli(target)
        assert (done.returncode, done.stdout, done.stderr) == (0, lines(5), "")
    tail = relay.cli("chat", "--tail", "2")
    assert tail.stdout == "attempt 1 line 4\nattempt 1 line 5\n", tail.stderr
    assert relay.cli("chat", "--tail", "0").stdout == ""
    # The same through the Python client; an admin reads it too.
    chunk = relay.admin.task_log("chat", "main", 0)
    assert (chunk.text, chunk.offset, chunk.next_offset) == (lines(5), 0, len(lines(5)))
    assert (chunk.attempt, chunk.latest_attempt) == (1, 1)
    assert not chunk.complete and not chunk.final
    assert listening_sockets(relay.agent.process.pid) == []  # it relayed over its own calls


def listening_sockets(pid: int) -> list[str]:
    """The TCP sockets process ``pid`` listens on (from /proc: its descriptors' inodes
    against the kernel's socket tables)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                listening.append(fields[1])
    return listening


def test_another_owner_is_refused_and_no_token_is_401(relay: Relay) -> None:
    relay.submit("private", "3")
    relay.wait_started("private")
    url = f"{relay.serve.url}/v1/groups/private/members/main/tasks/0/log"
    as_bob = httpx.get(url, headers={"Authorization": f"Bearer {BOB}"}, timeout=10)
    assert as_bob.status_code == 403, as_bob.text
    assert "bob (owner) may not read the logs of groups owned by alice" in as_bob.json()["error"]
    assert "line" not in as_bob.text
    assert httpx.get(url, timeout=10).status_code == 401
    refused = relay.cli("private", token=BOB)
    assert (refused.returncode, refused.stdout) == (6, "")
    assert refused.stderr.count("\n") == 1 and "may not read the logs" in refused.stderr
    agent_as_caller = httpx.get(
        url, headers={"Authorization": f"Bearer {agent_token(NODES)}"}, timeout=10
    )
    assert agent_as_caller.status_code == 403
    # Nor may an owner play the agent: its reads and answers are the node's agent's.
    reads = f"{relay.serve.url}/v1/nodes/n1/log-reads"
    assert httpx.get(reads, headers={"Authorization": f"Bearer {ALICE}"}).status_code == 403
    assert (
        httpx.post(
            reads, json={"pieces": []}, headers={"Authorization": f"Bearer {ALICE}"}
        ).status_code
        == 403
    )


def test_follow_prints_new_lines_and_the_next_attempt_after_a_sigkill(relay: Relay) -> None:
    relay.submit(
        "follow",
        "2",
        failure={
            "default": "fail-group",
            "rules": [{"members": ["main"], "action": "restart-member", "max_restarts": 2}],
        },
    )
    first = relay.wait_started("follow")
    command = [
        sys.executable, "-m", "costart.cli.main", "--server", relay.serve.url,
        "--token", ALICE, "logs", "follow", "-f",
    ]  # fmt: skip
    follower = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert follower.stdout is not None
        seen: list[str] = []
        lines_out: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(
            target=lambda: [lines_out.put(line) for line in follower.stdout or ()], daemon=True
        )
        reader.start()

        def expect(line: str) -> None:
            deadline = time.monotonic() + 90
            while line not in seen:
                try:
                    seen.append(lines_out.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    raise AssertionError(f"the follower never printed {line!r}: {seen}") from None
                seen[-1] = seen[-1].rstrip("\n")

        expect("attempt 1 line 2")
        (relay.control / "follow" / "more-1-1").touch()
        expect("attempt 1 more 1")  # new output of a running task, waited for
        os.kill(first, signal.SIGKILL)
        relay.wait_started("follow", attempt=2)
        expect("attempt 2 line 2")  # the restarted task's next attempt, from its start
        (relay.control / "follow" / "more-2-1").touch()
        expect("attempt 2 more 1")
        relay.alice.call("POST", "/v1/groups/follow/cancel", dict[str, Any])
        code = follower.wait(timeout=60)  # the group ended: nothing more will come
        assert code == 0, follower.stderr.read() if follower.stderr else ""
        reader.join(timeout=10)  # every line it printed, read
        while not lines_out.empty():
            seen.append(lines_out.get().rstrip("\n"))
        assert seen == [
            "attempt 1 line 1",
            "attempt 1 line 2",
            "attempt 1 more 1",
            "attempt 2 line 1",
            "attempt 2 line 2",
            "attempt 2 more 1",
        ]
        assert follower.stderr is not None
        assert "--- follow/main/0: attempt 2 (node " in follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    earlier = relay.cli("follow/main/0", "--attempt", "1")
    assert earlier.stdout == lines(2) + "attempt 1 more 1\n", earlier.stderr
    missing = relay.cli("follow/main/0", "--attempt", "7")
    assert missing.returncode == 4 and "has no attempt 7 (its latest is 2)" in missing.stderr


@pytest.mark.parametrize("kind", ["link", "hardlink"])
def test_a_log_swapped_for_a_link_to_a_secret_gives_nothing_of_it(relay: Relay, kind: str) -> None:
    name = f"swap-{kind}"
    relay.submit(name, "1", "--swap", kind, str(relay.victim))
    relay.wait_started(name)
    wait_until((relay.control / name / "swapped-main-0-1").exists, 30, "the task swapped its log")
    done = relay.cli(name)
    assert relay.secret not in done.stdout + done.stderr
    assert done.returncode == 5, (done.stdout, done.stderr)
    why = "is a symlink or not a directory: not followed" if kind == "link" else "one link"
    assert why in done.stderr
    with pytest.raises(ApiError) as refused:
        relay.alice.task_log(name, "main", 0, tail=5)
    assert refused.value.status == 409 and relay.secret not in refused.value.message
    relay.alice.call("POST", f"/v1/groups/{name}/cancel", dict[str, Any])


def test_a_large_log_comes_in_bounded_chunks_that_add_up_and_never_enters_the_store(
    relay: Relay,
) -> None:
    filler = 3 * LOG_PIECE_BYTES + 12345
    relay.submit("big", "1", "--bytes", str(filler))
    relay.wait_started("big")
    log = Path(wait_until(lambda: _log_file(relay, "big"), 30, "big's log file"))
    whole_size = filler + len(lines(1))  # the filler ends on a whole line past this
    wait_until(lambda: log.stat().st_size >= whole_size, 30, "big's output written")
    expected = log.read_bytes()
    read = b""
    chunks = 0
    offset = 0
    while offset < len(expected):
        chunk = relay.alice.task_log("big", "main", 0, offset=offset)
        assert chunk.offset == offset and len(chunk.text.encode()) <= LOG_PIECE_BYTES
        read += chunk.text.encode()
        offset = chunk.next_offset
        chunks += 1
    assert read == expected and chunks == 4
    whole = relay.cli("big/main/0")
    assert whole.stdout.encode() == expected
    relay.alice.call("POST", "/v1/groups/big/cancel", dict[str, Any])
    store = relay.directory / "store"
    for path in store.rglob("*"):
        if path.is_file():
            assert b"filler 000000000" not in path.read_bytes(), path


def _log_file(relay: Relay, name: str) -> str | None:
    group = relay.alice.call("GET", f"/v1/groups/{name}", dict[str, Any])
    for member in group["members"]:
        for task in member["tasks"]:
            if task.get("log"):
                path = relay.directory / "work" / task["log"]
                return str(path) if path.exists() else None
    return None


def test_a_task_refused_on_its_node_has_no_output_and_a_follower_ends(relay: Relay) -> None:
    relay.submit("unstarted", "1", owner="bob")  # bob has no account on the node
    wait_until(lambda: relay.state("unstarted") == "FAILED", 60, "bob's task refused")
    for follow in ((), ("-f",)):
        done = relay.cli("unstarted", *follow, token=BOB)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_bad_targets_are_one_line(relay: Relay) -> None:
    for bad, why in (
        ("a/b/c/d", "expected GROUP, GROUP/MEMBER or GROUP/MEMBER/TASK"),
        ("Bad", "'Bad' is not a valid group name"),
        ("chat/main/x", "the task 'x' is not an index"),
    ):
        done = relay.cli(bad)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr.count("\n") == 1 and why in done.stderr
    nowhere = relay.cli("no-such-group")
    assert nowhere.returncode == 4 and nowhere.stderr.count("\n") == 1
    local = subprocess.run(
        [sys.executable, "-m", "costart.cli.main", "logs", "chat"],
        check=False,
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=60,
    )
    assert local.returncode == 2 and "give --server URL" in local.stderr


def test_several_tasks_are_prefixed_and_a_closed_pipe_ends_a_follower_quietly(
    relay: Relay,
) -> None:
    relay.submit("pair", "2", tasks=2)
    for task in (0, 1):
        relay.wait_started("pair", task=task)
    done = relay.cli("pair")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[main/0] attempt 1 line 1",
        "[main/0] attempt 1 line 2",
        "[main/1] attempt 1 line 1",
        "[main/1] attempt 1 line 2",
    ]
    command = [
        sys.executable, "-m", "costart.cli.main", "--server", relay.serve.url,
        "--token", ALICE, "logs", "pair", "-f",
    ]  # fmt: skip
    follower = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert follower.stdout is not None and follower.stderr is not None
        assert follower.stdout.readline().startswith("[main/")
        follower.stdout.close()  # like `| head -1`
        for more in range(1, 4):  # new output meets the closed pipe
            (relay.control / "pair" / f"more-1-{more}").touch()
        assert follower.wait(timeout=60) == 0
        assert follower.stderr.read() == ""
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
    relay.alice.call("POST", "/v1/groups/pair/cancel", dict[str, Any])
