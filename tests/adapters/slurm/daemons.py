"""A throwaway Slurm cluster for the tests: one munged, one slurmctld and four slurmd
(nodes n1..n4, each 8 CPUs, 31 GB, 4 GPUs), all on 127.0.0.1 from a temporary
directory, all run in the foreground as our children and stopped (SIGTERM, then
SIGKILL) on exit. Every wait is bounded.

GPUs: Slurm drops a GPU without a device file and refuses a regular file as one; each
node's four GPUs are symbolic links to /dev/null that this module creates (a character
device, never opened: `TaskPlugin=task/none` confines no devices).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

NODES: Final = ("n1", "n2", "n3", "n4")
START_TIMEOUT_S: Final = 60.0
COMMAND_TIMEOUT_S: Final = 20.0
SBIN: Final = ("/usr/sbin", "/sbin")


class SlurmUnavailable(RuntimeError):
    """Slurm or munge is not installed (scripts/ensure-slurm.sh installs them)."""


def _which(name: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN]))
    if found is None:
        raise SlurmUnavailable(f"{name} is not installed: run scripts/ensure-slurm.sh")
    return found


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class SlurmCluster:
    """The cluster's files live in ``root``; `env` is what Slurm's commands need
    (``SLURM_CONF``)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.conf = root / "slurm.conf"
        self.jobcomp = root / "jobcomp.txt"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.env["PATH"] = os.pathsep.join([self.env.get("PATH", ""), *SBIN])

    # --- setup -------------------------------------------------------------------------

    def _write(self) -> None:
        root = self.root
        root.chmod(0o755)  # jobs run as other accounts and read nothing here but their cwd
        munge = root / "munge"
        munge.mkdir(mode=0o755)  # munged wants its socket's folder open to all
        (root / "keys").mkdir(mode=0o700)
        key = root / "keys" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        for sub in ("spool", "slurmd", "dev", "work"):
            (root / sub).mkdir()
        (root / "work").chmod(0o1777)
        for i in range(4):
            (root / "dev" / f"gpu{i}").symlink_to("/dev/null")
        ctld, slurmd, *node_ports = _free_ports(2 + len(NODES))
        nodes = "\n".join(
            f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} "
            f"CPUs=8 RealMemory=32000 Gres=gpu:4 Feature=rack{1 + i // 2}"
            for i, (name, port) in enumerate(zip(NODES, node_ports, strict=True))
        )
        self.conf.write_text(
            f"""ClusterName=costart-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
AuthInfo=socket={munge / "socket"}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={root / "spool"}
SlurmdSpoolDir={root / "slurmd"}/%n
SlurmctldPidFile={root / "slurmctld.pid"}
SlurmdPidFile={root / "slurmd"}/%n.pid
SlurmctldLogFile={root / "slurmctld.log"}
SlurmdLogFile={root / "slurmd"}/%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
MpiDefault=none
MinJobAge=86400
ReturnToService=2
SchedulerParameters=sched_interval=1
JobCompType=jobcomp/filetxt
JobCompLoc={self.jobcomp}
{nodes}
PartitionName=main Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=n[1-4] MaxTime=INFINITE State=UP
"""
        )
        gpus = root / "dev" / "gpu[0-3]"
        (root / "gres.conf").write_text(f"AutoDetect=off\nName=gpu File={gpus}\n")

    def _spawn(self, argv: Sequence[str], log: str) -> None:
        with (self.root / log).open("ab") as out:
            self.procs.append(
                subprocess.Popen(
                    argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=self.root
                )
            )

    def start(self) -> None:
        """Start the daemons and wait (bounded) until all four nodes are idle."""
        if os.geteuid() != 0:
            raise SlurmUnavailable("the Slurm tests start slurmd, which must run as root")
        munged, ctld, slurmd = _which("munged"), _which("slurmctld"), _which("slurmd")
        for command in ("sbatch", "scontrol", "scancel", "squeue"):
            _which(command)
        self._write()
        munge = self.root / "munge"
        self._spawn(
            [
                munged,
                "--foreground",
                f"--socket={munge / 'socket'}",
                f"--key-file={self.root / 'keys' / 'munge.key'}",
                f"--pid-file={munge / 'pid'}",
                f"--seed-file={munge / 'seed'}",
                f"--log-file={munge / 'log'}",
            ],
            "munged.out",
        )
        self._wait((munge / "socket").exists, "munged's socket")
        self._spawn([ctld, "-D", "-i", "-f", str(self.conf)], "slurmctld.out")
        self._wait(lambda: self.run("scontrol", "ping", check=False).returncode == 0, "slurmctld")
        for node in NODES:
            (self.root / "slurmd" / node).mkdir()
            self._spawn([slurmd, "-D", "-f", str(self.conf), "-N", node], f"{node}.out")
        self._wait(self._all_idle, "four idle nodes")

    def _all_idle(self) -> bool:
        out = self.run("sinfo", "-h", "-N", "-o", "%N %t", check=False).stdout
        states = dict(line.split() for line in out.splitlines() if line.strip())
        return all(states.get(node) == "idle" for node in NODES)

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"a Slurm daemon exited while waiting for {what}: {self.logs()}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"Slurm: no {what} after {START_TIMEOUT_S:.0f}s: {self.logs()}")

    def logs(self) -> str:
        tail = []
        for name in ("slurmctld.log", *(f"slurmd/{n}.log" for n in NODES), "munge/log"):
            path = self.root / name
            if path.exists():
                tail.append(f"{name}: " + " | ".join(path.read_text().splitlines()[-5:]))
        return "; ".join(tail)

    # --- use ---------------------------------------------------------------------------

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A Slurm command against this cluster (bounded in time)."""
        done = subprocess.run(
            argv,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
        return done

    def cancel_all(self) -> None:
        """Cancel every job (between tests: each test starts from free nodes)."""
        self.run("scancel", "--full", "--user=nobody", check=False)
        self.run("scancel", "--full", "--user=root", check=False)

    def _jobs_on_nodes(self) -> bool:
        out = self.run("squeue", "-h", "-t", "RUNNING,COMPLETING", "-o", "%i", check=False)
        return out.returncode != 0 or bool(out.stdout.strip())

    def stop(self) -> None:
        """Stop every daemon this cluster started: SIGTERM, then SIGKILL after 10 s.
        Jobs are cancelled first and waited for (bounded): a job step outlives its
        slurmd, and none may outlive the cluster."""
        if self.procs and all(p.poll() is None for p in self.procs):
            self.cancel_all()
            deadline = time.monotonic() + 15.0
            while time.monotonic() < deadline and self._jobs_on_nodes():
                time.sleep(0.2)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10.0
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        self.procs.clear()
