"""A run table's env values still reach the task: the server shows them to the agent of
the nodes a group's tasks are placed on, and only to it among agents (ADR 0064).
`serve` and an agent as real processes on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.harness import Cluster, kill_group_leftovers, wait_until

pytestmark = pytest.mark.timeout(240)
SECRET = "agent-s3cret-51c0de"
# Writes the variable to the file it is given, then exits 0: the job succeeds.
WRITE_ENV = 'printf "%s" "$API_KEY" > "$0"'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("agent-env"), [("n1", "n2", "n3", "n4")])
    try:
        yield running
    finally:
        running.close()


def test_the_task_gets_the_env_values_the_agent_read_from_the_server(
    cluster: Cluster, tmp_path: Path
) -> None:
    written = tmp_path / "api-key"
    gid = cluster.submit(
        {
            "name": "env-to-task",
            "owner": "alice",
            "members": [
                {
                    "name": "job",
                    "kind": "job",
                    "tasks": 1,
                    "shape": {"cpu": 1},
                    "run": {
                        "argv": ["/bin/sh", "-c", WRITE_ENV, str(written)],
                        "env": {"API_KEY": SECRET},
                    },
                }
            ],
        }
    )
    try:
        cluster.wait_state("env-to-task", {"SUCCEEDED"})
        wait_until(written.exists, 30, "the task wrote its API_KEY")
        assert written.read_text() == SECRET
    finally:
        kill_group_leftovers(gid)
