"""`costart serve` leading and standing by on PostgreSQL (two processes standing in for
two hosts): the leader takes the lease, the standby waits warm, and after a SIGKILL of
the leader the standby promotes and serves writes; nothing acknowledged is lost."""

from __future__ import annotations

import signal

from costart.domain.world import World
from costart.eventlog.event_reading import RecorderSource
from costart.pgstore import env_for_url
from costart.replay.rebuild import rebuild
from tests.ha.procs import ServeProcess, submit_until_accepted
from tests.pg_support import fresh_schema

LEASE_S = 1.0
WAIT_S = 20.0


def names_in(world: World) -> set[str]:
    return {group.name for group in world.groups.values()}


def test_serve_standby_takes_over_a_postgresql_log_from_a_killed_leader(pg_url, tmp_path):
    with fresh_schema(pg_url) as url:
        leader = ServeProcess(url, tmp_path, standby=False, lease_s=LEASE_S, name="leader")  # type: ignore[arg-type]
        standby = None
        try:
            leader.wait_serving()
            standby = ServeProcess(url, tmp_path, standby=True, lease_s=LEASE_S, name="standby")  # type: ignore[arg-type]
            standby.wait_for("standby tailing", WAIT_S)
            acknowledged = [f"before-{i}" for i in range(5)]
            for name in acknowledged:
                submit_until_accepted(leader.url, name, WAIT_S)
            leader.signal(signal.SIGKILL)
            promoted = standby.wait_for("promoted", LEASE_S + WAIT_S)
            assert promoted["epoch"] == 2
            standby.wait_serving()
            submit_until_accepted(standby.url, "after-0", WAIT_S)
            acknowledged.append("after-0")
            assert standby.stop() == 0
        finally:
            leader.close()
            if standby is not None:
                standby.close()
        world = rebuild(RecorderSource.from_env(env_for_url(url)))
        assert set(acknowledged) <= names_in(world)
