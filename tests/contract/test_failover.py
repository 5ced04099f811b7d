"""Failover with two controller processes on one PostgreSQL log (standing in for two
hosts): a SIGKILLed leader under load is replaced by the standby with nothing
acknowledged lost, and a leader paused past its lease cannot write once resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.domain.events import GroupSubmitted
from costart.eventlog.event_reading import RecorderSource
from costart.pgstore import env_for_url
from tests import child_processes
from tests.pg_support import fresh_schema

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 30


class Node:
    """A `pg_node` process whose output lines are collected as they come."""

    def __init__(self, url: str, role: str, prefix: str) -> None:
        self.proc = child_processes.popen(
            [sys.executable, "-m", "tests.contract.pg_node", url, role, prefix],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def wait_for(self, predicate, what: str) -> str:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if predicate(line):
                    return line
            time.sleep(0.01)
        raise AssertionError(f"no {what} within {TIMEOUT_S}s; got {self.lines[-5:]}")

    def acks(self) -> list[str]:
        return [line.split()[1] for line in list(self.lines) if line.startswith("ACK ")]

    def wait_for_acks(self, count: int) -> None:
        self.wait_for(lambda _: len(self.acks()) >= count, f"{count} acks")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)


@pytest.fixture
def url(pg_url: str) -> Iterator[str]:
    with fresh_schema(pg_url) as schema_url:
        yield schema_url


@pytest.fixture
def nodes() -> Iterator[list[Node]]:
    started: list[Node] = []
    yield started
    for node in started:
        node.stop()


def _groups_in_log(url: str) -> list[str]:
    source = RecorderSource.from_env(env_for_url(url))
    names = []
    for _, event in source.read_events():
        if isinstance(event, GroupSubmitted):
            names.append(event.spec.name)
    return names


def test_the_standby_takes_over_a_sigkilled_leader_and_nothing_acknowledged_is_lost(url, nodes):
    leader = Node(url, "leader", "a")
    nodes.append(leader)
    leader.wait_for_acks(20)
    standby = Node(url, "standby", "b")
    nodes.append(standby)
    standby.wait_for(lambda line: line == "TAILING", "standby tailing")
    leader.wait_for_acks(len(leader.acks()) + 50)  # under load
    os.kill(leader.proc.pid, signal.SIGKILL)
    leader.proc.wait(timeout=10)
    acknowledged = leader.acks()
    promoted = standby.wait_for(lambda line: line.startswith("PROMOTED"), "promotion")
    assert promoted.split()[1] == "2"
    standby.wait_for_acks(5)
    logged = _groups_in_log(url)
    assert set(acknowledged) <= set(logged)
    first_b = logged.index("b-0")
    assert all(name.startswith("a-") for name in logged[:first_b])
    assert all(name.startswith("b-") for name in logged[first_b:])


def test_a_paused_leader_resumed_after_the_takeover_cannot_write(url, nodes):
    leader = Node(url, "leader", "a")
    nodes.append(leader)
    leader.wait_for_acks(10)  # the leader holds the lease before the standby starts
    standby = Node(url, "standby", "b")
    nodes.append(standby)
    standby.wait_for(lambda line: line == "TAILING", "standby tailing")
    leader.wait_for_acks(len(leader.acks()) + 30)
    os.kill(leader.proc.pid, signal.SIGSTOP)
    standby.wait_for(lambda line: line.startswith("PROMOTED"), "promotion")
    standby.wait_for_acks(5)
    acknowledged_before_pause = leader.acks()
    os.kill(leader.proc.pid, signal.SIGCONT)
    leader.wait_for(lambda line: line.startswith("FENCED"), "the deposed leader's exit")
    assert leader.proc.wait(timeout=10) == 3
    standby.wait_for_acks(len(standby.acks()) + 5)  # the new leader still writes
    logged = _groups_in_log(url)
    assert set(leader.acks()) <= set(logged)
    assert set(acknowledged_before_pause) <= set(logged)
    first_b = logged.index("b-0")
    # nothing of the deposed leader after the new epoch's first write
    assert all(name.startswith("b-") for name in logged[first_b:])
