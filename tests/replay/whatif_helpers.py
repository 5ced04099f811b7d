"""Shared by the what-if tests: a log re-run in memory, read as the command reads it."""

from __future__ import annotations

import os
from pathlib import Path

from costart.bootstrap import sim_controller_factory
from costart.domain.events import DomainEvent
from costart.eventlog.backends import open_replay_log
from costart.placement.cluster_file import ClusterDefinition
from costart.replay.whatif.changes import Change
from costart.replay.whatif.extract import recorded_workload
from costart.replay.whatif.options import RECORDED_POLICY
from costart.replay.whatif.rerun import run_whatif, whatif_setup
from costart.replay.whatif.workload import RecordedWorkload

Events = list[tuple[int, DomainEvent]]


def read_log(store: Path | str) -> tuple[RecordedWorkload, Events]:
    """The recorded workload and every event of the log at ``store`` (a directory or
    a PostgreSQL URL), read-only."""
    with open_replay_log(str(store), os.environ) as log:
        return recorded_workload(log.source, str(store)), list(log.source.read_events())


def rerun(
    recorded: RecordedWorkload,
    cluster: ClusterDefinition,
    policy: str = RECORDED_POLICY,
    changes: list[Change] | None = None,
) -> Events:
    """The what-if's events (its log kept in memory)."""
    setup, _ = whatif_setup(recorded, cluster, changes or [])
    _, engine = run_whatif(setup, policy, sim_controller_factory())
    return list(engine.controller.read_events())


def shape(events: Events) -> list[tuple[int, str]]:
    """Every event of a log as (time, type): two exact re-runs have the same."""
    return [(e.at_ns, type(e).__name__) for _, e in events]
