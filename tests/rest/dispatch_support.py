"""Callers, specs and waits shared by the dispatch-path tests (one server per module)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.rest.serving import DEADLINE_S, POLL_S

OWNER = "owner-token-0123456789"
OTHER = "other-token-0123456789"
ADMIN = "admin-token-0123456789"
CLAIMS = "claims-token-0123456789"
TRAIN_AGENT = "train-agent-token-0123456789"
SERVE_AGENT = "serve-agent-token-0123456789"
H100 = [f"h100-{i:04d}" for i in range(32)]
L40S = [f"l40s-{i:04d}" for i in range(32)]


def tokens_toml() -> str:
    def nodes(names: list[str]) -> str:
        return "[" + ", ".join(f'"{n}"' for n in names) + "]"

    return (
        f'[tokens.{OWNER}]\nuser = "alice"\nrole = "owner"\n'
        f'[tokens.{OTHER}]\nuser = "bob"\n'
        f'[tokens.{ADMIN}]\nuser = "root"\nrole = "admin"\n'
        f'[tokens.{CLAIMS}]\nuser = "csi"\nrole = "claims"\n'
        f'[tokens.{TRAIN_AGENT}]\nuser = "agent-train"\nrole = "agent"\nnodes = {nodes(H100)}\n'
        f'[tokens.{SERVE_AGENT}]\nuser = "agent-serve"\nrole = "agent"\nnodes = {nodes(L40S)}\n'
    )


def life_spec(name: str, rollout_replicas: int = 2, trainer_tasks: int = 2) -> dict[str, Any]:
    """A trainer job on H100 nodes and a rollout service on L40S nodes; an OOM of the
    rollout restarts it alone; the group succeeds when the trainer does."""
    return {
        "name": name,
        "owner": "alice",
        "failure": {
            "default": "fail-group",
            "rules": [
                {
                    "members": ["rollout"],
                    "reasons": ["oom"],
                    "action": "restart-member",
                    "max_restarts": 3,
                }
            ],
        },
        "members": [
            {
                "name": "trainer",
                "kind": "job",
                "tasks": trainer_tasks,
                "shape": {"gpu": 8, "gpu_type": "H100"},
                "claims": ["gpus"],
            },
            {
                "name": "rollout",
                "kind": "replica-set",
                "replicas": rollout_replicas,
                "min_start": rollout_replicas,
                "min_running": 1,
                "shape": {"gpu": 1, "gpu_type": "L40S"},
                "claims": ["gpus"],
            },
        ],
    }


def client(url: str, token: str | None, **kwargs: Any) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=15, **kwargs)


def wait_until(read, check, what: str) -> Any:
    """Poll ``read()`` until ``check(value)``; bounded."""
    deadline = time.monotonic() + DEADLINE_S
    value = None
    while time.monotonic() < deadline:
        value = read()
        if check(value):
            return value
        time.sleep(POLL_S)
    raise AssertionError(f"never {what}: {value}")


def member(c: httpx.Client, group: str, name: str) -> dict[str, Any]:
    rows = c.get(f"/v1/groups/{group}/members").json()
    return next(m for m in rows if m["name"] == name)


def group_state(c: httpx.Client, group: str) -> str:
    return str(c.get(f"/v1/groups/{group}").json()["group"]["state"])


def task_nodes(c: httpx.Client, group: str, name: str) -> dict[int, str]:
    holds = c.get("/v1/holds").json()
    return {
        h["index"]: h["node"]
        for h in holds
        if h["group"] == group and h["member"] == name and h["kind"] == "used"
    }


def position(url: str) -> int:
    return int(httpx.get(f"{url}/healthz", timeout=10).json()["position"])
