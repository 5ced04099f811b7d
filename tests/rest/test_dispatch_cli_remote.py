"""The CLI's dispatch verbs against a real server: scale, ``events NAME -f`` and
``get groups -w`` following the watch stream (in the format of the list printed first)."""

from __future__ import annotations

import subprocess
import sys
import time

from tests import child_processes
from tests.rest.serving import DEADLINE_S
from tests.rest.test_server import ALICE, client, spec, wait_for_state


def cli(url: str, env: dict[str, str], *args: str) -> list[str]:
    return [sys.executable, "-m", "costart.cli.main", "--server", url, "--token", ALICE, *args]


def follow_until(command: list[str], env: dict[str, str], wanted: str, act) -> list[str]:
    """Run a following command, do ``act()`` once it prints its first lines, and read its
    output until a line contains ``wanted`` (bounded); then stop it."""
    process = child_processes.popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + DEADLINE_S
        acted = False
        for line in process.stdout:
            lines.append(line.rstrip())
            if not acted:
                act()
                acted = True
            if wanted in line or time.monotonic() > deadline:
                break
    finally:
        process.kill()
        process.wait(timeout=10)
    return lines


def test_scale_through_the_server(server):
    url, _, env = server
    scaled_spec = spec("scale-cli", kind="replica-set", replicas=2, min_start=2, min_running=1)
    scaled_spec["members"][0].pop("tasks")
    alice = client(url, ALICE)
    assert alice.post("/v1/groups", json=scaled_spec).status_code == 201
    out = subprocess.run(
        cli(url, env, "scale", "scale-cli/trainer", "--replicas", "3"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "scaled to 3" in out.stdout
    below = subprocess.run(
        cli(url, env, "scale", "scale-cli/trainer", "--replicas", "0"),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert below.returncode == 3 and "replicas" in below.stderr  # invalid: names the field


def test_events_follow_prints_new_events_as_they_happen(server):
    url, _, env = server
    alice = client(url, ALICE)
    assert alice.post("/v1/groups", json=spec("follow-me")).status_code == 201
    lines = follow_until(
        cli(url, env, "events", "follow-me", "-f"),
        env,
        "GroupCancelled",
        lambda: alice.post("/v1/groups/follow-me/cancel"),
    )
    # One format throughout: the time base, then the timeline's columns, the followed
    # events included.
    assert lines[0].startswith("times: +offset from follow-me's submission at "), lines[0]
    assert lines[1].split() == ["POS", "TIME", "EVENT", "MEMBER", "BY", "DETAIL"]
    cancelled = next(line for line in lines if "GroupCancelled" in line)
    assert cancelled.split()[3:5] == ["-", "user:alice"], cancelled
    assert all(line.split()[1].startswith("+") for line in lines[2:])  # from submission


def test_get_groups_watch_prints_a_group_again_when_it_changes(server):
    url, _, env = server
    alice = client(url, ALICE)
    lines = follow_until(
        cli(url, env, "get", "groups", "-w"),
        env,
        "watched-group",
        lambda: alice.post("/v1/groups", json=spec("watched-group")),
    )
    assert any("watched-group" in line for line in lines), lines
    wait_for_state(alice, "watched-group", "RUNNING")
