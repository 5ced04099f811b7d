"""A shared node, end to end (docs/design.md §11): a real `costart serve`, a real `costart
agent` running as root, and two owners mapped to two OS accounts (unused numeric uids).

Shown here: alice's task runs as alice's account with its secret resolved on the node;
nothing it can read (every process's command line and environment, its inherited
descriptors, every file under the node's directories) holds the agent's token; bob's
task runs as bob; bob sees the names of alice's env but not the values; hostile
``cwd``, ``log_dir`` and probe targets are refused at submit naming the field; a symlink
alice plants between two attempts never makes the agent write elsewhere; an owner with
no account is refused on the node with reason ``refused``, and ``describe`` says why;
and the secret's bytes appear nowhere in the store or the processes' logs. (A forged
launch record killing nothing is `test_agent_e2e`'s.)
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from costart.rest.auth import token_hash
from costart.rest.client import ApiError, Client
from tests.agent.harness import Proc, Serve, wait_until
from tests.agent.root import ALICE_UID, BOB_UID, require_root

ADMIN = "admin-token-" + "a" * 20
ALICE = "alice-token-" + "b" * 20
BOB = "bob-token-" + "c" * 20
CAROL = "carol-token-" + "d" * 20
NODES = ("n1", "n2")
ROOT = Path(__file__).resolve().parents[2]

# Alice's task: who it runs as, the secret it got, and everything it can read. (An
# argv may hold no newline: one line of shell.)
SCAN = "; ".join(
    [
        "id -u > who",
        "printf '%s' \"$HF_TOKEN\" > seen-secret",
        '{ for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do cat "$f"; echo; done',
        'for f in /proc/self/fd/*; do cat "$f"; echo; done',
        'find "$SCAN_ROOT" /tmp /dev/shm -xdev -type f -readable -size -4M ! -name dump'
        " -exec cat {} +",
        "} > dump 2>/dev/null",
        "echo scanned",
    ]
)
# Alice's other task: on its first attempt it moves the log directory the agent made in
# her own directory and leaves a symlink to somewhere else in its place, then fails.
PLANT = (
    'if [ "$COSTART_ATTEMPT" = 1 ]; then mv logs logs.moved && ln -s "$VICTIM" logs'
    " && exit 3; fi; echo second attempt ran"
)


def tokens_file(path: Path, agent_token: str) -> None:
    entries = [
        (ADMIN, "root", "admin", ""),
        (ALICE, "alice", "owner", ""),
        (BOB, "bob", "owner", ""),
        (CAROL, "carol", "owner", ""),
        (agent_token, "agent-n", "agent", 'nodes = ["n1", "n2"]\n'),
    ]
    text = ""
    for token, user, role, extra in entries:
        text += f'[tokens."{token_hash(token)}"]\nuser = "{user}"\nrole = "{role}"\n{extra}\n'
    path.write_text(text)


class Node:
    """One serve and one agent, on a directory every test account can traverse."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.token = "agent-" + secrets.token_hex(24)
        self.secret = "sk-" + secrets.token_hex(24)
        tokens_file(directory / "tokens.toml", self.token)
        cluster = 'levels = ["rack"]\n' + "".join(
            f'[[nodes]]\nname = "{n}"\npath = ["r1"]\ncpu = 4\nmem_gb = 8\n' for n in NODES
        )
        (directory / "cluster.toml").write_text(cluster)
        self.work = directory / "work"
        for owner, uid in (("alice", ALICE_UID), ("bob", BOB_UID)):
            home = self.work / owner
            home.mkdir(parents=True)
            os.chown(home, uid, uid)
            home.chmod(0o700)
        (self.work / "alice" / "ready").touch()  # the file probe's
        os.chown(self.work / "alice" / "ready", ALICE_UID, ALICE_UID)
        self.victim = directory / "victim"
        self.victim.mkdir()
        store_secrets = directory / "secrets"
        (store_secrets / "alice" / "team-a").mkdir(parents=True)
        (store_secrets / "alice" / "team-a" / "hf").write_text(self.secret + "\n")
        store_secrets.chmod(0o700)
        (directory / "accounts.toml").write_text(
            f"[owners.alice]\nuid = {ALICE_UID}\n[owners.bob]\nuid = {BOB_UID}\n"
        )
        self.serve = Serve(directory, "serve")
        self.serve.wait_serving()
        self.agent = self.start_agent()
        self.admin = Client([self.serve.url], ADMIN)

    def start_agent(self) -> Proc:
        args = [
            sys.executable, "-m", "costart.cli.main", "agent",
            "--server", self.serve.url,
            "--work-dir", str(self.work),
            "--state-dir", str(self.directory / "state"),
            "--accounts", str(self.directory / "accounts.toml"),
            "--secrets-dir", str(self.directory / "secrets"),
            "--peer-host", "127.0.0.1",
            "--resync", "0.5",
            "--node", "n1", "--node", "n2",
        ]  # fmt: skip
        agent = Proc(
            args,
            self.directory / "agent.log",
            self.directory,
            env={"COSTART_AGENT_TOKEN": self.token},
        )
        wait_until(lambda: "agent running" in agent.log.read_text(), 60, agent.tail)
        return agent

    def submit(self, token: str, spec: dict[str, Any]) -> httpx.Response:
        return httpx.post(
            f"{self.serve.url}/v1/groups",
            json=spec,
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )

    def state(self, name: str) -> str:
        return str(self.admin.call("GET", f"/v1/groups/{name}", dict[str, Any])["group"]["state"])

    def wait_state(self, name: str, states: set[str], timeout_s: float = 60) -> str:
        return wait_until(
            lambda: (s := self.state(name)) in states and s,
            timeout_s,
            lambda: f"{name} in {states} (is {self.state(name)})\n{self.agent.tail()}",
        )

    def log_events(self, name: str) -> list[dict[str, Any]]:
        last = self.admin.call_list(f"/v1/groups/{name}/events", dict[str, Any])[-1]["position"]
        found = []
        for event in self.admin.watch(after=0, group=name):
            found.append({"type": event.type, **event.event})
            if event.position >= last:
                return found
        raise AssertionError("the watch stream ended")

    def close(self) -> None:
        self.agent.stop()
        self.serve.stop()
        self.admin.close()


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    require_root()
    # Not under pytest's own 0700 temporary tree: the test accounts must traverse it.
    directory = Path(tempfile.mkdtemp(prefix="costart-shared-node-"))
    directory.chmod(0o755)
    running = Node(directory)
    try:
        yield running
    finally:
        running.close()
        shutil.rmtree(directory, ignore_errors=True)


def job(name: str, owner: str, script: str, **run: Any) -> dict[str, Any]:
    return {
        "name": name,
        "owner": owner,
        "members": [
            {
                "name": "main",
                "kind": "job",
                "tasks": 1,
                "shape": {"cpu": 1},
                "run": {"argv": ["/bin/sh", "-c", script], "grace": "1s", **run},
            }
        ],
    }


def test_alice_runs_as_alice_with_her_secret_and_can_read_no_token(node: Node) -> None:
    spec = job(
        "alice-scan",
        "alice",
        SCAN,
        cwd="alice",
        env={"SCAN_ROOT": str(node.directory), "MODE": "alice-plain-" + "v" * 8},
        env_secrets={"HF_TOKEN": "team-a/hf"},
        probes={"data": {"file": "ready", "period": "100ms"}},
    )
    spec["members"][0]["claims"] = ["data"]
    answer = node.submit(ALICE, spec)
    assert answer.status_code == 201, answer.text
    assert node.wait_state("alice-scan", {"SUCCEEDED", "FAILED"}) == "SUCCEEDED", node.agent.tail()
    home = node.work / "alice"
    assert (home / "who").read_text().strip() == str(ALICE_UID)
    assert (home / "seen-secret").read_text() == node.secret
    dump = (home / "dump").read_bytes()
    assert b"costart.cli.main" in dump  # it did read other processes' command lines
    assert b"COSTART_GROUP=alice-scan" in dump  # and its own environment
    assert node.token.encode() not in dump


def test_bob_runs_as_bob_and_cannot_act_for_alice_or_read_her_values(node: Node) -> None:
    answer = node.submit(BOB, job("bob-job", "bob", "id -u > who", cwd="bob"))
    assert answer.status_code == 201, answer.text
    assert node.wait_state("bob-job", {"SUCCEEDED", "FAILED"}) == "SUCCEEDED"
    assert (node.work / "bob" / "who").read_text().strip() == str(BOB_UID)
    plain = "alice-plain-" + "v" * 8
    with Client([node.serve.url], BOB) as bob:
        members = bob.call("GET", "/v1/groups/alice-scan/members", list[dict[str, Any]])
        with pytest.raises(ApiError) as refused:
            bob.call(
                "POST",
                "/v1/groups/alice-scan/members/main/tasks/0",
                dict[str, Any],
                json={"attempt": 1, "event": "exited", "exit_code": 1, "reason": "error"},
            )
    assert refused.value.status == 403
    env = dict(members[0]["run"]["env"])
    assert set(env) == {"MODE", "SCAN_ROOT"}
    raw = httpx.get(
        f"{node.serve.url}/v1/groups/alice-scan/members",
        headers={"Authorization": f"Bearer {BOB}"},
    ).text
    assert plain not in raw
    with Client([node.serve.url], ALICE) as alice:
        own = alice.call("GET", "/v1/groups/alice-scan/members", list[dict[str, Any]])
    assert dict(own[0]["run"]["env"])["MODE"] == plain


@pytest.mark.parametrize(
    ("run", "field", "why"),
    [
        ({"cwd": "/etc"}, "members[0].run.cwd", "is absolute"),
        ({"cwd": "../../.."}, "members[0].run.cwd", "leaves the agent's work root"),
        ({"log_dir": "/var/log/x"}, "members[0].run.log_dir", "is absolute"),
        ({"probes": {"data": {"file": "/etc/shadow"}}}, "members[0].run.probes.data.file", ""),
        (
            {"probes": {"data": {"http": "http://169.254.169.254/latest/meta-data"}}},
            "members[0].run.probes.data.http",
            "",
        ),
        ({"probes": {"data": {"tcp": "169.254.169.254:80"}}}, "members[0].run.probes.data.tcp", ""),
    ],
)
def test_hostile_paths_and_probe_targets_are_refused_at_submit(node, run, field, why) -> None:
    before = httpx.get(f"{node.serve.url}/healthz").json()["position"]
    spec = job(f"hostile-{zlib.crc32(repr(run).encode())}", "alice", "true", **run)
    spec["members"][0]["claims"] = ["data"]
    answer = node.submit(ALICE, spec)
    assert answer.status_code == 422, answer.text
    assert answer.json()["field"] == field and why in answer.json()["error"]
    assert httpx.get(f"{node.serve.url}/healthz").json()["position"] == before


def test_a_planted_symlink_changes_nothing(node: Node) -> None:
    spec = job(
        "alice-plant",
        "alice",
        PLANT,
        cwd="alice",
        log_dir="alice/logs",
        env={"VICTIM": str(node.victim)},
    )
    spec["failure"] = {
        "default": "fail-group",
        "rules": [
            {"members": ["main"], "reasons": ["any"], "action": "restart-member", "max_restarts": 1}
        ],
    }
    assert node.submit(ALICE, spec).status_code == 201
    assert node.wait_state("alice-plant", {"SUCCEEDED", "FAILED"}) == "FAILED"
    assert list(node.victim.iterdir()) == []
    failed = [e for e in node.log_events("alice-plant") if e["type"] == "MemberFailed"]
    assert [e["reason"] for e in failed] == ["error", "refused"]
    assert "symlink" in failed[1]["note"], failed[1]


def test_an_owner_without_an_account_is_refused_and_describe_says_why(node: Node) -> None:
    assert node.submit(CAROL, job("carol-job", "carol", "true")).status_code == 201
    assert node.wait_state("carol-job", {"SUCCEEDED", "FAILED"}) == "FAILED"
    failed = [e for e in node.log_events("carol-job") if e["type"] == "MemberFailed"]
    assert failed[0]["reason"] == "refused"
    assert "no OS account for owner 'carol'" in failed[0]["note"]
    described = subprocess.run(
        [sys.executable, "-m", "costart.cli.main", "--server", node.serve.url,
         "--token", ADMIN, "describe", "group", "carol-job"],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert described.returncode == 0, described.stderr
    assert "refused" in described.stdout and "no OS account" in described.stdout


def test_the_secret_is_nowhere_in_the_store_or_the_logs(node: Node) -> None:
    # After the groups above ran (module order): every byte the server and agent wrote.
    # Alice's own files hold it on purpose: what her task saw, and its environment.
    own = {node.work / "alice" / "seen-secret", node.work / "alice" / "dump"}
    source = node.directory / "secrets" / "alice" / "team-a" / "hf"
    written = [p for p in node.directory.rglob("*") if p.is_file() and p not in {*own, source}]
    assert any(p.name == "data.mdb" for p in written)
    assert any(p.name.endswith(".log") and "alice-scan" in str(p) for p in written)
    for path in written:
        assert node.secret.encode() not in path.read_bytes(), path
