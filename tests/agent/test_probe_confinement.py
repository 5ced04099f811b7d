"""A probe reaches no more than its group's task could (docs/design.md §11): http and tcp only the
group's member addresses and the node's --probe-allow rules, never a link-local or
metadata address; exec and file probes as the task's account. Real sockets on
127.0.0.1, real processes; the account tests need root (tests/agent/root.py)."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme

from costart.agent import NodeTask
from costart.agent.accounts import Account, Accounts
from costart.agent.agent import Agent, AgentConfig
from costart.agent.probe_selection import MembersPerPass
from costart.agent.probe_targets import TargetPolicy, group_addresses, parse_allow
from costart.agent.probes import ProbeLoop, ProbeResult, TaskDir, check
from costart.agent.taskenv import peers
from costart.domain import Probe, RunSpec
from costart.projections import MemberView, TaskView
from tests.agent.harness import wait_until
from tests.agent.root import ALICE_UID, require_root

MS = 10**6
OWN = Accounts.agents_own(["o"], allow_root=True).resolve("o")
ALICE = Account("alice", ALICE_UID, ALICE_UID, (), None, None, shared=False)
NOWHERE = TargetPolicy()  # no rule, no member address
EVERYWHERE = TargetPolicy(allow=(parse_allow("0.0.0.0/0:*"), parse_allow("[::/0]:*")))
NOT_ALLOWED = "not a member address of the group and not in --probe-allow"
NEVER = "never allowed (whatever --probe-allow says)"


def probe(kind: str, target: str = "", argv: tuple[str, ...] = ()) -> Probe:
    return Probe("c", kind, 50 * MS, 1000 * MS, argv=argv, target=target)


def run(
    p: Probe,
    targets: TargetPolicy = NOWHERE,
    task_dir: TaskDir | None = None,
    account: Account = OWN,
    env: dict[str, str] | None = None,
) -> ProbeResult:
    where = task_dir or TaskDir(Path("/"), ".")
    return check(p, where, env or {}, account=account, targets=targets)


def verdict_of_loop(p: Probe, targets: TargetPolicy, task_dir: TaskDir) -> tuple[bool, str]:
    """What a probe loop reports (fail_after is 0: only a pass or a refusal ends it)."""
    verdicts: list[tuple[bool, str]] = []
    loop = ProbeLoop(p, task_dir, {}, lambda *v: verdicts.append(v), account=OWN, targets=targets)
    loop.start()
    try:
        wait_until(lambda: verdicts, 10, "a verdict")
    finally:
        loop.cancel()
    return verdicts[0]


class Recorder(BaseHTTPRequestHandler):
    """/ok answers 200, /redirect a 302 to /ok; every request is recorded."""

    seen: list[tuple[str, str]]

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Host", "")))
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/ok")
        else:
            self.send_response(200 if self.path == "/ok" else 503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[int, list[tuple[str, str]]]]:
    """An HTTP server on 127.0.0.1: its port and the requests it saw (path, Host)."""
    seen: list[tuple[str, str]] = []
    handler = type("Handler", (Recorder,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1], seen
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening socket on 127.0.0.1 that accepts nothing by itself."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sock.settimeout(0.3)
        yield sock


def never_connected(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except TimeoutError:
        return True
    return False


def a_member(port: int, nodes: list[str], name: str = "server") -> MemberView:
    spec = RunSpec(argv=("x",), grace_ns=1, log_dir="l", port=port)
    return MemberView(
        group="g", group_id="gid", name=name, index=0, kind="replica-set", owner="o",
        profile="", state="PLACED", desired=len(nodes), min_start=1, min_running=1, run=spec,
        tasks=tuple(TaskView(index=i, node=n, attempt=1, state="PLACED") for i, n in enumerate(nodes)),
    )  # fmt: skip


# --- http and tcp: where a probe may connect ----------------------------------------------


def test_a_member_address_of_the_group_is_ready(server):
    port, _ = server
    members = [a_member(port, ["n1"], "rollout"), a_member(port + 1, [], "reward")]
    targets = TargetPolicy(members=group_addresses(members, lambda node: "127.0.0.1"))
    assert run(probe("tcp", f"127.0.0.1:{port}"), targets).ok
    assert run(probe("http", f"http://127.0.0.1:{port}/ok"), targets) == ProbeResult(
        True, "HTTP 200"
    )
    # A node's host may be a name (--peer-host): its addresses are the member's.
    by_name = TargetPolicy(members=group_addresses(members, lambda node: "localhost"))
    assert run(probe("http", f"http://localhost:{port}/ok"), by_name).ok
    assert run(probe("tcp", f"127.0.0.1:{port}"), by_name).ok


def test_the_member_addresses_are_the_ones_the_tasks_are_told():
    members = [a_member(9200, ["n1", "n2"], "rollout"), a_member(9300, ["n3"], "reward")]
    host_of = {"n1": "10.0.0.1", "n2": "10.0.0.2", "n3": "10.0.0.3"}.__getitem__
    told = {a for addresses in peers(members, host_of).values() for a in addresses}
    assert {f"{h}:{p}" for h, p in group_addresses(members, host_of)} == told


def test_an_allow_listed_cidr_and_port_is_ready(server):
    port, _ = server
    for rule in (f"127.0.0.0/8:{port}", f"127.0.0.1:{port - 1}-{port}", "127.0.0.1/32:*"):
        targets = TargetPolicy(allow=(parse_allow(rule),))
        assert run(probe("http", f"http://127.0.0.1:{port}/ok"), targets).ok, rule
        assert run(probe("tcp", f"127.0.0.1:{port}"), targets).ok, rule


def test_a_port_not_allowed_fails_the_claim_at_once_and_is_never_connected_to(tmp_path, listener):
    port = listener.getsockname()[1]
    other = TargetPolicy(allow=(parse_allow(f"127.0.0.1:{port + 1}"),))
    for p in (probe("tcp", f"127.0.0.1:{port}"), probe("http", f"http://127.0.0.1:{port}/ok")):
        assert verdict_of_loop(p, other, TaskDir(tmp_path, ".")) == (
            False,
            f"probe target 127.0.0.1:{port} is not allowed on this node: {NOT_ALLOWED}",
        )
    assert never_connected(listener)


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("169.254.169.254:80", f"a cloud metadata address, {NEVER}"),
        ("169.254.10.20:22", f"a link-local address, {NEVER}"),
        ("100.100.100.200:80", f"a cloud metadata address, {NEVER}"),
        ("[fe80::1]:80", f"a link-local address, {NEVER}"),
        ("[::ffff:169.254.169.254]:80", f"a cloud metadata address, {NEVER}"),
        # Forms a resolver reads as that address: named as what they resolve to.
        ("2852039166:80", f"it resolves to 169.254.169.254, a cloud metadata address, {NEVER}"),
        ("0xa9fea9fe:80", f"it resolves to 169.254.169.254, a cloud metadata address, {NEVER}"),
    ],
)
def test_link_local_and_metadata_addresses_are_refused_even_when_everything_is_allowed(target, why):
    for p in (probe("tcp", target), probe("http", f"http://{target}/latest/meta-data/")):
        verdict = run(p, EVERYWHERE)
        assert verdict.refused and not verdict.ok
        assert verdict.detail == f"probe target {target} is not allowed on this node: {why}"


def fake_dns(
    monkeypatch: pytest.MonkeyPatch, answers: dict[str, Callable[[], list[str]]]
) -> list[str]:
    """Answer the names in ``answers`` (each call draws the addresses anew); every other
    name as the system does. Returns the names looked up, in order."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        asked.append(host)
        if host not in answers:
            return real(host, port, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port)))
            for address in answers[host]()
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def test_a_name_that_resolves_to_a_refused_address_is_refused(monkeypatch, server):
    port, seen = server
    fake_dns(
        monkeypatch,
        {
            "weights.example": lambda: ["169.254.169.254"],
            # One good address is not enough: every address a name gives must pass.
            "mixed.example": lambda: ["127.0.0.1", "169.254.169.254"],
        },
    )
    for name in ("weights.example", "mixed.example"):
        verdict = run(probe("http", f"http://{name}:{port}/ok"), EVERYWHERE)
        assert verdict.refused, verdict
        assert verdict.detail == (
            f"probe target {name}:{port} is not allowed on this node: it resolves to "
            f"169.254.169.254, a cloud metadata address, {NEVER}"
        )
    assert seen == []


def test_the_name_is_resolved_once_and_the_checked_address_is_the_one_connected(
    monkeypatch, server
):
    port, seen = server
    answers = iter([["127.0.0.1"]])  # a rebinding name: any second answer is the metadata
    asked = fake_dns(monkeypatch, {"rebind.example": lambda: next(answers, ["169.254.169.254"])})
    allowed = TargetPolicy(allow=(parse_allow(f"127.0.0.1:{port}"),))
    assert run(probe("http", f"http://rebind.example:{port}/ok"), allowed).ok
    assert asked == ["rebind.example"]
    assert seen == [("/ok", f"rebind.example:{port}")]  # the URL's host, as written
    refused = run(probe("http", f"http://rebind.example:{port}/ok"), allowed)
    assert refused.refused and "169.254.169.254" in refused.detail
    assert len(seen) == 1


def test_https_is_checked_against_the_urls_host_while_connecting_to_the_checked_address(
    monkeypatch, tmp_path
):
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("weights.example").configure_cert(context)
    seen: list[tuple[str, str]] = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Recorder,), {"seen": seen}))
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        port = httpd.server_address[1]
        fake_dns(monkeypatch, {"weights.example": lambda: ["127.0.0.1"]})
        allowed = TargetPolicy(allow=(parse_allow(f"127.0.0.1:{port}"),))
        url = f"https://weights.example:{port}/ok"
        untrusted = run(probe("http", url), allowed)  # the system's CAs do not know ours
        assert not untrusted.ok and not untrusted.refused
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.detail
        ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
        assert run(probe("http", url), allowed) == ProbeResult(True, "HTTP 200")
        assert seen == [("/ok", f"weights.example:{port}")]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_redirect_is_not_followed_even_to_an_allowed_url(server):
    port, seen = server
    allowed = TargetPolicy(allow=(parse_allow(f"127.0.0.1:{port}"),))
    verdict = run(probe("http", f"http://127.0.0.1:{port}/redirect"), allowed)
    assert verdict == ProbeResult(False, "HTTP 302 (redirects are not followed)")
    assert [path for path, _ in seen] == ["/redirect"]


def test_ipv6_rules_are_matched_on_ipv6_addresses():
    try:
        sock = socket.socket(socket.AF_INET6)
        sock.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with sock:
        sock.listen()
        port = sock.getsockname()[1]
        v6 = TargetPolicy(allow=(parse_allow(f"[::1]:{port}"),))
        v4 = TargetPolicy(allow=(parse_allow(f"127.0.0.1:{port}"),))
        assert run(probe("tcp", f"[::1]:{port}"), v6).ok
        assert run(probe("tcp", f"[::1]:{port}"), v4).refused


# --- file and exec: what the task's account could see --------------------------------------


@pytest.mark.parametrize("target", ["../secret.bin", "a/../../secret.bin", "/etc/shadow"])
def test_a_file_probe_outside_the_tasks_directory_fails_at_once(tmp_path, target):
    task = tmp_path / "task"
    task.mkdir()
    (tmp_path / "secret.bin").touch()
    ready, detail = verdict_of_loop(probe("file", target), NOWHERE, TaskDir(tmp_path, "task"))
    assert not ready
    assert detail.startswith(f"file probe target {target!r} is not allowed on this node: ")


def test_a_link_in_the_tasks_directory_path_is_not_followed(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "weights.bin").touch()
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "task").symlink_to(tmp_path / "elsewhere")
    verdict = run(probe("file", "weights.bin"), task_dir=TaskDir(tmp_path / "work", "task"))
    assert not verdict.ok and "symlink" in verdict.detail
    verdict = run(probe("exec", argv=("true",)), task_dir=TaskDir(tmp_path / "work", "task"))
    assert not verdict.ok and "symlink" in verdict.detail


@pytest.fixture
def task_dirs(tmp_path: Path) -> Path:
    """work/task (open to all) with open/weights.bin and closed/weights.bin (closed is
    root's, 0700), and work/private (root's, 0700) with weights.bin."""
    work = tmp_path / "work"
    for directory, mode in (("task", 0o755), ("task/open", 0o755), ("task/closed", 0o700),
                            ("private", 0o700)):  # fmt: skip
        (work / directory).mkdir(parents=True)
        (work / directory).chmod(mode)
    for name in ("task/open/weights.bin", "task/closed/weights.bin", "private/weights.bin"):
        (work / name).touch()
    return work


def test_a_file_probe_as_another_account_sees_only_what_that_account_can(task_dirs):
    require_root()
    task = TaskDir(task_dirs, "task")
    for target in ("open/weights.bin", "closed/weights.bin"):
        assert run(probe("file", target), task_dir=task).ok  # the agent (root) sees both
    assert run(probe("file", "open/weights.bin"), task_dir=task, account=ALICE).ok
    hidden = run(probe("file", "closed/weights.bin"), task_dir=task, account=ALICE)
    assert hidden == ProbeResult(
        False,
        f"closed/weights.bin: no such file in the task's directory (as {ALICE.describe()})",
    )
    # A directory the account may not enter: the task could not start in it either.
    private = TaskDir(task_dirs, "private")
    assert run(probe("file", "weights.bin"), task_dir=private).ok
    shut = run(probe("file", "weights.bin"), task_dir=private, account=ALICE)
    assert shut == ProbeResult(False, f"{ALICE.describe()} cannot enter the task's directory")


def test_an_exec_probe_runs_as_the_tasks_account_with_the_tasks_environment(task_dirs):
    require_root()
    task = TaskDir(task_dirs, "task")
    env = {"PATH": "/usr/bin:/bin", "MODE": "fast"}
    as_alice = ("sh", "-c", f'test "$(id -u):$(id -g)" = {ALICE_UID}:{ALICE_UID}')
    assert run(probe("exec", argv=as_alice), task_dir=task, account=ALICE, env=env).ok
    assert not run(probe("exec", argv=as_alice), task_dir=task, env=env).ok  # the agent's
    in_task = ("sh", "-c", f'test "$MODE" = fast && test "$(pwd)" = {task_dirs / "task"}')
    assert run(probe("exec", argv=in_task), task_dir=task, account=ALICE, env=env).ok
    # The account enters the directory itself: one it may not search is not entered.
    private = TaskDir(task_dirs, "private")
    shut = run(probe("exec", argv=("true",)), task_dir=private, account=ALICE)
    assert not shut.ok and "cannot enter" in shut.detail


def test_the_root_guard_fails_a_skip_when_root_is_required(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("COSTART_REQUIRE_ROOT", "1")
    with pytest.raises(pytest.fail.Exception, match="COSTART_REQUIRE_ROOT=1"):
        require_root()
    monkeypatch.delenv("COSTART_REQUIRE_ROOT")
    with pytest.raises(pytest.skip.Exception):
        require_root()


# --- the agent: each probe gets its task's account and its group's addresses ---------------


class MembersOnly:
    """The one call `_sync_probes` makes: the group's member views."""

    def __init__(self, members: list[MemberView]) -> None:
        self.members = members

    def call_list(self, path: str, type_: object) -> list[MemberView]:
        return self.members

    def close(self) -> None:
        pass


def an_agent_probing(tmp_path: Path, accounts: Accounts) -> Agent:
    """An agent on n1 (peers reach it at 127.0.0.1) whose one PLACED task, trainer/0 of
    alice, waits for a member claim probed by a file."""
    spec = RunSpec(
        argv=("x",), grace_ns=1, log_dir="l", port=9100,
        probes=(Probe("weights", "file", 50 * MS, 500 * MS, target="weights.bin"),),
    )  # fmt: skip
    trainer = MemberView(
        group="g", group_id="gid", name="trainer", index=0, kind="job", owner="alice",
        profile="", state="PLACED", desired=1, min_start=1, min_running=1, run=spec,
        claims={"weights": "PENDING"},
        tasks=(TaskView(index=0, node="n1", attempt=1, state="PLACED"),),
    )  # fmt: skip
    config = AgentConfig(
        servers=("http://127.0.0.1:9",), token="t", nodes=("n1",), work_dir=tmp_path,
        state_dir=tmp_path / "state", default_host="127.0.0.1", accounts=accounts,
        probe_allow=(parse_allow("10.0.0.0/8:5432"),),
    )  # fmt: skip
    agent = Agent(config, client=lambda: MembersOnly([trainer]))
    task = NodeTask("g", "trainer", 0, "n1", 1, "job", "PLACED", False, "gid", "PLACED", 1, "alice")
    agent._sync_probes([task], MembersPerPass(agent.api))
    return agent


def test_the_agent_probes_as_the_owners_account_within_the_groups_addresses(tmp_path):
    own = Accounts.agents_own(["alice"], allow_root=True)
    agent = an_agent_probing(tmp_path, own)
    [loop] = agent.probes.values()
    loop.cancel()
    assert loop._account == own.resolve("alice")
    assert loop._targets == TargetPolicy(
        allow=(parse_allow("10.0.0.0/8:5432"),), members=frozenset({("127.0.0.1", 9100)})
    )
    assert loop._task_dir == TaskDir(tmp_path, ".")


def test_a_claim_whose_owner_has_no_account_here_fails_at_once(tmp_path):
    agent = an_agent_probing(tmp_path, Accounts({}))
    assert agent.probes == {}
    [(ready, detail)] = agent.claims.values()
    assert not ready and detail.startswith("no OS account for owner 'alice' on this node")
