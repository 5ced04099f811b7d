"""A costart cluster on this machine: `costart serve` (an LMDB store in a run directory,
127.0.0.1, a free port, a tokens file it writes) and one `costart agent` per node of a
cluster file, each a process of one run (`processes.Processes`). Used by `costart demo
--live` and by ``bench/bench_agent.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx

from costart.cli.live.processes import Processes
from costart.rest.auth import new_token, token_hash

OWNER: Final = "alice"
POLL_S: Final = 0.1
# Variables of the user's shell that would point the children elsewhere.
_SCRUBBED: Final = (
    "COSTART_SERVER",
    "COSTART_TOKEN",
    "COSTART_AGENT_TOKEN",
    "COSTART_STORE",
    "COSTART_CLUSTER",
)


class LocalClusterError(Exception):
    """A process of the local cluster did not start or stopped (the message names it and
    ends with the tail of its log)."""


@dataclass
class RunTokens:
    """The run's tokens (only their SHA-256 is in the tokens file)."""

    owner: str
    claims: str
    agents: dict[str, str] = field(default_factory=dict)  # node -> token


def cluster_nodes(cluster: Path) -> list[str]:
    """The node names of a cluster file with explicit ``[[nodes]]`` (one agent each)."""
    doc = tomllib.loads(cluster.read_text())
    nodes = [str(n["name"]) for n in doc.get("nodes", [])]
    if not nodes:
        raise LocalClusterError(f"{cluster}: name each node in a [[nodes]] table (one agent each)")
    return nodes


def write_accounts(path: Path) -> list[str]:
    """The agents' accounts file: the demo's owner runs on the agents' own account (one
    machine, one user: the operator's choice ADR 0066 asks to be written down). The
    extra agent arguments that takes: ``--allow-root`` when the demo runs as root."""
    path.write_text(
        f"# The demo's tasks run as the user who started it.\n[owners.{OWNER}]\nagent = true\n"
    )
    extra = ["--accounts", str(path)]
    return extra + (["--allow-root"] if os.geteuid() == 0 else [])


def write_tokens(path: Path, nodes: list[str]) -> RunTokens:
    """A tokens file for the owner ``alice``, a claims driver, and one agent per node
    bound to that node."""
    tokens = RunTokens(owner=new_token(), claims=new_token())
    lines: list[str] = []
    entries: list[tuple[str, str, str, str | None]] = [
        (tokens.owner, OWNER, "owner", None),
        (tokens.claims, "claims-driver", "claims", None),
    ]
    for node in nodes:
        tokens.agents[node] = new_token()
        entries.append((tokens.agents[node], f"agent-{node}", "agent", node))
    for token, user, role, bound in entries:
        lines += [
            f'[tokens."{token_hash(token)}"]',
            f"user = {json.dumps(user)}",
            f'role = "{role}"',
        ]
        if bound is not None:
            lines.append(f"nodes = [{json.dumps(bound)}]")
        lines.append("")
    path.write_text("\n".join(lines))
    path.chmod(0o600)
    return tokens


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def costart_argv(*args: str) -> list[str]:
    """The `costart` command of this interpreter (no PATH lookup)."""
    return [sys.executable, "-m", "costart.cli.main", *args]


class LocalCluster:
    """`serve` and its agents, as processes of run ``run`` in ``run_dir``."""

    def __init__(self, cluster: Path, run_dir: Path, run: str, interval_s: float = 0.25) -> None:
        self.cluster = cluster
        self.run_dir = run_dir
        self.interval_s = interval_s
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        self.processes = Processes(run, env)
        self.nodes = cluster_nodes(cluster)
        self.tokens = write_tokens(run_dir / "tokens.toml", self.nodes)
        self.logs: dict[str, Path] = {}
        self.url = ""
        # The agents' ledgers: outside run_dir (their work dir, which tasks write), and
        # this run's alone (another run may name the same nodes).
        self.state_root: Path | None = None

    def log(self, name: str) -> Path:
        """The log file of the process ``name`` (made known to `tail`)."""
        path = self.logs[name] = self.run_dir / f"{name}.log"
        return path

    def start(self, deadline: float) -> None:
        """Start the server, wait until it answers, then start the agents."""
        port = free_port()
        argv = costart_argv(
            "--store",
            str(self.run_dir / "store"),
            "--cluster",
            str(self.cluster),
            "serve",
            "--tokens",
            str(self.run_dir / "tokens.toml"),
            "--port",
            str(port),
            "--interval",
            str(self.interval_s),
        )
        server = self.processes.start("serve", argv, self.log("serve"), self.run_dir)
        self.url = f"http://127.0.0.1:{port}"
        while not self._healthy():
            if server.poll() is not None:
                raise LocalClusterError(
                    f"costart serve exited ({server.returncode}): {self.tail('serve')}"
                )
            if time.monotonic() > deadline:
                raise LocalClusterError(
                    f"costart serve did not answer /healthz: {self.tail('serve')}"
                )
            time.sleep(POLL_S)
        accounts = write_accounts(self.run_dir / "accounts.toml")
        self.state_root = Path(tempfile.mkdtemp(prefix="costart-agent-state-"))
        for node in self.nodes:
            name = f"agent-{node}"
            self.processes.start(
                name,
                # Every node is this machine: peers reach each other on 127.0.0.1.
                costart_argv(
                    "agent",
                    "--server",
                    self.url,
                    "--node",
                    node,
                    "--peer-host",
                    "127.0.0.1",
                    "--work-dir",
                    str(self.run_dir),
                    *accounts,
                    "--state-dir",
                    str(self.state_root / node),
                ),
                self.log(name),
                self.run_dir,
                env={"COSTART_AGENT_TOKEN": self.tokens.agents[node]},
            )

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    def check_alive(self) -> None:
        """Raise if the server or an agent has exited."""
        for name, process in self.processes.started.items():
            if (name == "serve" or name.startswith("agent-")) and process.poll() is not None:
                raise LocalClusterError(f"{name} exited ({process.returncode}): {self.tail(name)}")

    def tail(self, name: str, lines: int = 15) -> str:
        path = self.logs[name]
        text = path.read_text(errors="replace").splitlines()[-lines:]
        return f"{path}:\n" + "\n".join(text)

    def stop(self, grace_s: float) -> list[int]:
        """Stop every process of the run; the pids a final sweep of the process table
        had to kill (empty when the orderly stop left nothing). The agents go first,
        while the server still answers their last reports."""
        clients = [name for name in self.processes.started if name != "serve"]
        self.processes.stop_all(grace_s, clients)
        self.processes.stop_all(grace_s, ["serve"])
        swept = self.processes.sweep(grace_s)
        if self.state_root is not None:  # what the agents launched matters no more
            shutil.rmtree(self.state_root, ignore_errors=True)
        return swept
