"""`costart serve` and `costart slurm` as real processes on 127.0.0.1 in front of the
session's Slurm cluster (`tests.adapters.slurm.daemons`). Every wait is bounded."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from costart.adapters.slurm.jobs import SlurmJob, parse_jobs
from costart.rest.client import Client
from tests.adapters.slurm.daemons import NODES, SlurmCluster
from tests.agent.harness import ADMIN, Proc, Serve, wait_until

ADAPTER_TOKEN = "slurm-adapter-token-0123456789"
CLAIMS_TOKEN = "claim-driver-token-0123456789"
NOBODY = 65534  # the account the tests' owner is mapped to (`sbatch --uid`)


def cluster_file(slurm: SlurmCluster, output: Path) -> None:
    """`costart slurm cluster-file -o OUTPUT` against the session's cluster."""
    done = subprocess.run(
        [sys.executable, "-m", "costart.cli.main", "slurm", "cluster-file", "-o", str(output)],
        env={"SLURM_CONF": slurm.env["SLURM_CONF"], "PATH": slurm.env["PATH"]},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"costart slurm cluster-file: exit {done.returncode}: {done.stderr}")


def write_files(directory: Path, slurm: SlurmCluster) -> None:
    """Tokens (an admin, the adapter as the agent of all four nodes, a claim driver)
    and the cluster costart places on: Slurm's four nodes as Slurm reports them, written
    by `costart slurm cluster-file`."""
    nodes = ", ".join(f'"{n}"' for n in NODES)
    (directory / "tokens.toml").write_text(
        f'[tokens.{ADMIN}]\nuser = "alice"\nrole = "admin"\n\n'
        f'[tokens.{ADAPTER_TOKEN}]\nuser = "slurm"\nrole = "agent"\nnodes = [{nodes}]\n\n'
        f'[tokens.{CLAIMS_TOKEN}]\nuser = "claims"\nrole = "claims"\n'
    )
    cluster_file(slurm, directory / "cluster.toml")
    (directory / "accounts.toml").write_text(f"[owners.alice]\nuid = {NOBODY}\n")


class Adapter(Proc):
    def __init__(self, directory: Path, url: str, slurm: SlurmCluster, name: str) -> None:
        args = [
            sys.executable, "-m", "costart.cli.main",
            "slurm",
            "--server", url,
            "--state-dir", str(directory / "adapter-state"),
            "--accounts", str(directory / "accounts.toml"),
            "--poll", "0.3",
        ]  # fmt: skip
        for node in NODES:
            args += ["--node", node]
        env = {"SLURM_CONF": slurm.env["SLURM_CONF"], "PATH": slurm.env["PATH"]}
        env["COSTART_AGENT_TOKEN"] = ADAPTER_TOKEN
        super().__init__(args, directory / f"{name}.log", directory, env=env)

    def wait_running(self) -> None:
        def running() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"costart slurm exited:\n{self.tail()}")
            return "slurm adapter running" in self.log.read_text()

        wait_until(running, 60, f"costart slurm running\n{self.tail()}")


class SlurmFront:
    """A server and the adapter in front of the Slurm cluster."""

    def __init__(self, directory: Path, slurm: SlurmCluster) -> None:
        self.directory = directory
        self.slurm = slurm
        write_files(directory, slurm)
        self.serve = Serve(directory, "serve")
        self.serve.wait_serving()
        self.api = Client([self.serve.url], ADMIN, failover_s=10)
        self.claims = Client([self.serve.url], CLAIMS_TOKEN, failover_s=10)
        self.adapters = 0
        self.adapter = self.start_adapter()

    def start_adapter(self) -> Adapter:
        self.adapters += 1
        adapter = Adapter(self.directory, self.serve.url, self.slurm, f"slurm-{self.adapters}")
        adapter.wait_running()
        return adapter

    def close(self) -> None:
        self.adapter.stop()
        self.serve.stop()
        self.api.close()
        self.claims.close()

    # --- costart's side ----------------------------------------------------------------

    def submit(self, spec: dict[str, Any]) -> str:
        return str(self.api.call("POST", "/v1/groups", dict[str, Any], json=spec)["id"])

    def group(self, name: str) -> dict[str, Any]:
        return self.api.call("GET", f"/v1/groups/{name}", dict[str, Any])

    def state(self, name: str) -> str:
        return str(self.group(name)["group"]["state"])

    def events(self, name: str) -> list[dict[str, Any]]:
        return self.api.call_list(f"/v1/groups/{name}/events", dict[str, Any])

    def placed_nodes(self, name: str) -> dict[tuple[str, int], str]:
        """(member, task) -> the node costart placed it on."""
        holds = self.api.call_list("/v1/holds", dict[str, Any])
        return {
            (h["member"], h["index"]): h["node"]
            for h in holds
            if h["group"] == name and h["kind"] == "used"
        }

    def ready(self, name: str, member: str, claim: str) -> None:
        """The outside claim driver's word: the member's claim is READY."""
        rows = self.api.call_list(f"/v1/groups/{name}/members", dict[str, Any])
        attempt = next(r["attempt"] for r in rows if r["name"] == member)
        self.claims.call(
            "POST", f"/v1/groups/{name}/members/{member}/claims/{claim}", dict[str, Any],
            json={"attempt": attempt, "status": "READY"},
        )  # fmt: skip

    # --- Slurm's side ------------------------------------------------------------------

    def jobs(self, group_id: str) -> list[SlurmJob]:
        """Every Slurm job of the group (by the identity in its name)."""
        found = parse_jobs(self.slurm.run("scontrol", "show", "job", "-o").stdout)
        return [j for j in found if j.identity is not None and j.identity.group_id == group_id]

    def runs(self, group_id: str) -> Counter[tuple[str, int, int]]:
        """How many Slurm jobs each (member, task, attempt) has."""
        return Counter(
            (j.identity.member, j.identity.task, j.identity.attempt)
            for j in self.jobs(group_id)
            if j.identity is not None
        )

    def logs(self) -> str:
        return (
            f"--- adapter\n{self.adapter.tail()}\n--- serve\n{self.serve.tail()[-2000:]}\n"
            f"--- squeue\n{self.slurm.run('squeue', '-a', '-t', 'all', check=False).stdout}"
            f"--- daemons\n{self.slurm.logs()}"
        )


def whole_node_group(name: str, tasks: int = 1) -> dict[str, Any]:
    """A group of ``tasks`` trainer tasks that each take a whole test node (4 GPUs), so
    it fits only where that many nodes have nothing else on their GPUs."""
    return {
        "name": name,
        "owner": "alice",
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": tasks,
                "shape": {"gpu": 4, "cpu": 2, "mem_gb": 4},
                "run": {"argv": ["/bin/sh", "-c", "exec sleep 600"]},
            }
        ],
    }
