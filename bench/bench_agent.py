"""Benchmark of the node agent's start path (issue 18): from ``BarrierReleased``
committed to every process of a 32-task group running across 8 `costart agent`
processes, against starting the same 32 programs with `subprocess.Popen` directly.

A process counts as running when it prints its first line: the program
(`agent_first_line.py`) prints the wall-clock time it runs at, so neither side is
timed by a poll. Agent side: `costart serve` with 8 agents on 127.0.0.1 (an LMDB store
in a temp dir, durable commits); each round submits a group of one 32-task job whose
claim ``go`` has no probe, waits until it is PLACED (the agents watch their nodes and
see the tasks), then reports the claim READY as a claims driver: the barrier is released
in that command, and the round's figure is the newest first-line time minus the
``BarrierReleased`` event's controller time (stamped before the append is committed, so
the figure includes the commit). Baseline side: 32 ``Popen`` calls in a row, from the
moment before the first one. The program runs under ``python -S`` on both sides (a
cheap start, so the agent's own overhead is not hidden behind interpreter start-up).
Each round runs both sides, which goes first alternating, so both see the same load;
one warm-up round is discarded. Median and p99 (nearest rank: the maximum
below 100 rounds) over the rounds; the target is a ratio of at most 3 for both.

Run: python bench/bench_agent.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import write_results

from costart.bootstrap import configure_logging_once
from costart.cli.live.local import LocalCluster
from costart.projections import GroupDetail, GroupView, MemberView, TimelineEntry
from costart.rest.client import Client

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "bench" / "agent_first_line.py"
# -S: no site-packages scan. The start-up left is the interpreter's own (~30 ms, not
# ~130 ms with this venv's site), so the agent's own overhead weighs more in the ratio.
ARGV = [sys.executable, "-S", str(PROGRAM)]
TASKS = 32
AGENTS = 8
GPUS_PER_NODE = TASKS // AGENTS
TIMEOUT_S = 120.0
POLL_S = 0.02
SETTLE_S = 1.0  # after PLACED: the agents have read their tasks, as a real barrier wait allows
GRACE_S = 10.0


def write_cluster(path: Path) -> None:
    nodes = [
        f'[[nodes]]\nname = "bench-{i}"\npath = ["r1"]\ngpu = {GPUS_PER_NODE}\ncpu = 64\nmem_gb = 256\n'
        for i in range(1, AGENTS + 1)
    ]
    path.write_text('levels = ["rack"]\n\n' + "\n".join(nodes))


def group_doc(name: str, log_dir: Path) -> dict[str, Any]:
    return {
        "name": name,
        "owner": "alice",
        "placement": {"mode": "atomic"},
        "success": {"when": "all-jobs"},
        "members": [
            {
                "name": "worker",
                "kind": "job",
                "tasks": TASKS,
                "shape": {"gpu": 1, "cpu": 1, "mem_gb": 1},
                "claims": ["go"],
                "run": {
                    "argv": ARGV,
                    "log_dir": str(log_dir),
                    "grace": "5s",
                },
            }
        ],
    }


def first_line_ns(path: Path) -> int:
    return int(path.read_text().split()[0])


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def popen_round(folder: Path) -> tuple[float, list[float]]:
    """All 32 programs started with Popen: (ms until the last ran, ms of each)."""
    folder.mkdir(parents=True)
    outputs = [(folder / f"{i}.log").open("wb") for i in range(TASKS)]
    try:
        started = time.time_ns()
        processes = [
            subprocess.Popen(ARGV, stdout=out, stderr=subprocess.STDOUT) for out in outputs
        ]
        for process in processes:
            if process.wait(timeout=TIMEOUT_S) != 0:
                raise RuntimeError(f"the program failed ({process.returncode})")
    finally:
        for out in outputs:
            out.close()
    each = [(first_line_ns(folder / f"{i}.log") - started) / 1e6 for i in range(TASKS)]
    return max(each), each


def wait_state(api: Client, name: str, wanted: str) -> GroupView:
    until = time.monotonic() + TIMEOUT_S
    while True:
        group = api.call("GET", f"/v1/groups/{name}", GroupDetail).group
        if group.state == wanted:
            return group
        if group.state in ("FAILED", "CANCELLED") or time.monotonic() > until:
            raise RuntimeError(f"group {name} is {group.state}, waited for {wanted}")
        time.sleep(POLL_S)


def agent_round(local: LocalCluster, index: int, log_dir: Path) -> tuple[float, list[float]]:
    """One group through the agents: (ms from BarrierReleased until the last ran, each)."""
    name = f"bench-{index:03d}"
    with (
        Client(local.url, local.tokens.owner) as owner,
        Client(local.url, local.tokens.claims) as claims,
    ):
        owner.call(
            "POST",
            "/v1/groups",
            GroupView,
            content=json.dumps(group_doc(name, log_dir)).encode(),
            headers={"Content-Type": "application/json"},
        )
        wait_state(owner, name, "PLACED")
        time.sleep(SETTLE_S)
        [worker] = owner.call_list(f"/v1/groups/{name}/members", MemberView)
        claims.call(
            "POST",
            f"/v1/groups/{name}/members/worker/claims/go",
            dict,
            json={"attempt": worker.attempt, "status": "READY"},
        )
        wait_state(owner, name, "SUCCEEDED")
        timeline = owner.call_list(f"/v1/groups/{name}/events", TimelineEntry)
        members = owner.call_list(f"/v1/groups/{name}/members", MemberView)
    [released] = [e.at_ns for e in timeline if e.event == "BarrierReleased"]
    logs = [Path(task.log) for m in members for task in m.tasks if task.log is not None]
    if len(logs) != TASKS:
        raise RuntimeError(f"{name}: {len(logs)} task log files, expected {TASKS}")
    each = [(first_line_ns(path) - released) / 1e6 for path in logs]
    return max(each), each


def summary(all_running: list[float], each: list[float]) -> dict[str, float]:
    return {
        "all_running_median_ms": statistics.median(all_running),
        "all_running_p99_ms": p99(all_running),
        "per_process_median_ms": statistics.median(each),
        "per_process_p99_ms": p99(each),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    configure_logging_once(level=logging.WARNING)
    rounds: dict[str, tuple[list[float], list[float]]] = {"agent": ([], []), "popen": ([], [])}
    with tempfile.TemporaryDirectory(prefix="costart-bench-agent-") as tmp:
        run_dir = Path(tmp)
        cluster = run_dir / "cluster.toml"
        write_cluster(cluster)
        local = LocalCluster(cluster, run_dir, secrets.token_hex(8), interval_s=0.25)
        try:
            local.start(time.monotonic() + TIMEOUT_S)
            for index in range(args.rounds + 1):  # round 0 warms both sides up
                # Alternate which side goes first: neither always runs in the other's wake.
                if index % 2:
                    popen = popen_round(run_dir / "popen" / str(index))
                    agent = agent_round(local, index, run_dir / "task-logs")
                else:
                    agent = agent_round(local, index, run_dir / "task-logs")
                    popen = popen_round(run_dir / "popen" / str(index))
                local.check_alive()
                if index == 0:
                    continue
                for side, (last, each) in (("agent", agent), ("popen", popen)):
                    rounds[side][0].append(last)
                    rounds[side][1].extend(each)
                print(
                    f"round {index}: agent {agent[0]:.0f} ms, popen {popen[0]:.0f} ms",
                    file=sys.stderr,
                )
        finally:
            left = local.stop(GRACE_S)
            if left:
                print(f"killed processes left behind: {left}", file=sys.stderr)
    agent, popen = summary(*rounds["agent"]), summary(*rounds["popen"])
    results = {
        "rounds": args.rounds,
        "tasks": TASKS,
        "agents": AGENTS,
        "agent": agent,
        "popen": popen,
        "ratios": {
            "median_vs_popen": agent["all_running_median_ms"] / popen["all_running_median_ms"],
            "p99_vs_popen": agent["all_running_p99_ms"] / popen["all_running_p99_ms"],
        },
    }
    write_results("agent", results)
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
