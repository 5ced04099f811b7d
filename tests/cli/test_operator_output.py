"""What an operator reads: deadlines with the time left, reasons true now, and a
mistyped store refused without creating anything. Whole rendered lines are compared."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from costart.bootstrap import Settings, bootstrap
from costart.cli import commands
from costart.cli.exits import EXIT_USAGE
from costart.cli.main import DEMO_SPEC, app
from costart.domain.decisions import HoldCapacity, ReleaseGroup
from costart.domain.events import Assignment

runner = CliRunner()
S = 10**9
T0 = 1_796_134_690 * S  # 2026-12-01T14:18:10Z


def costart(*args: str):
    return runner.invoke(app, list(args))


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


@pytest.fixture
def reserving_store(tmp_path, monkeypatch):
    """A real LMDB store with grpo-run-42 RESERVING since T0 (15m timeout), read at
    T0 + 14m33s."""
    store = tmp_path / "store"
    controller = bootstrap(Settings(store=str(store), cluster=None), clock=lambda: T0)
    controller.submit_document(DEMO_SPEC.read_bytes(), "toml")
    controller.apply_decisions(
        [HoldCapacity("grpo-run-42", {"trainer": (Assignment(0, "h100-0000"),)})]
    )
    controller.close()
    monkeypatch.setattr(commands.time, "time_ns", lambda: T0 + 14 * 60 * S + 33 * S)
    return store


def test_get_wide_shows_the_reservation_deadline_with_the_time_left(reserving_store):
    result = costart("--store", str(reserving_store), "get", "groups", "-o", "wide")
    assert result.exit_code == 0, result.output
    header, row = lines(result.stdout)
    assert header.split() == [
        "NAME", "OWNER", "STATE", "RUNNING", "ATTEMPT", "PRIORITY", "MODE", "TASKS",
        "HELD", "GPU", "DEADLINE", "EXPECTED", "START", "AGE", "REASON",
    ]  # fmt: skip
    # A store read directly has no start estimator: only `costart serve` plans ahead.
    assert row.split() == [
        "grpo-run-42", "alice", "RESERVING", "0/4", "1", "10", "reserve", "0/16", "1", "8",
        "reservation", "in", "27s", "n/a", "(no", "serve)", "14m33s", "waiting", "for", "the", "next", "scheduling",
        "session",
    ]  # fmt: skip


def test_describe_lists_deadlines_as_utc_times_with_the_time_left(reserving_store):
    result = costart("--store", str(reserving_store), "describe", "group", "grpo-run-42")
    assert result.exit_code == 0, result.output
    out = lines(result.stdout)
    assert "Submitted:  2026-12-01T14:18:10Z (14m33s ago)" in out
    assert "Deadline:   reservation expires 2026-12-01T14:33:10Z (in 27s)" in out


def test_a_released_group_says_when_it_retries_until_the_next_session(reserving_store):
    controller = bootstrap(
        Settings(store=str(reserving_store), cluster=None), clock=lambda: T0 + 14 * 60 * S
    )
    controller.apply_decisions([ReleaseGroup("grpo-run-42", "cluster changed")])
    controller.close()
    result = costart("--store", str(reserving_store), "get", "groups")
    row = lines(result.stdout)[1]
    # Released at 14m00s with a 1m backoff; read at 14m33s: 27s left.
    assert row.split("  ")[-1].strip() == (
        "backoff: released after: cluster changed; retry in 27s (at 2026-12-01T14:33:10Z)"
    )
    wide = lines(costart("--store", str(reserving_store), "get", "groups", "-o", "wide").stdout)
    assert wide[1].split()[10:13] == ["retry", "in", "27s"]
    described = lines(
        costart("--store", str(reserving_store), "describe", "group", "grpo-run-42").stdout
    )
    assert "Deadline:   retry 2026-12-01T14:33:10Z (in 27s)" in described


READS = [
    ("get", "groups"),
    ("get", "members"),
    ("get", "holds"),
    ("describe", "group", "g"),
    ("events", "g"),
    ("why", "g"),
    ("cancel", "g"),
    ("snapshot",),
]


@pytest.mark.parametrize("command", READS, ids=" ".join)
def test_a_command_on_a_store_that_does_not_exist_fails_and_creates_nothing(tmp_path, command):
    missing = tmp_path / "no-such-store"
    result = costart("--store", str(missing), *command)
    assert result.exit_code == EXIT_USAGE
    assert lines(result.stderr) == [
        f"error: no store at {missing}: no such directory (check --store)"
    ]
    assert not missing.exists()


def test_a_directory_without_a_log_is_refused_and_left_empty(tmp_path):
    result = costart("--store", str(tmp_path), "get", "groups")
    assert result.exit_code == EXIT_USAGE
    assert lines(result.stderr) == [
        f"error: no store at {tmp_path}: the directory holds no controller log"
    ]
    assert list(tmp_path.iterdir()) == []


def test_kubectl_habits_names_jsonpath_sort_by_and_picking_groups(reserving_store, tmp_path):
    store = str(reserving_store)
    second = tmp_path / "second.toml"
    second.write_text(
        DEMO_SPEC.read_text()
        .replace('name = "grpo-run-42"', 'name = "grpo-run-43"')
        .replace("priority = 10", "priority = 5")
    )
    assert costart("--store", store, "submit", "--create", str(second), "-o", "name").stdout == (
        "group/grpo-run-43\n"
    )
    picked = costart("--store", store, "get", "groups", "grpo-run-43", "grpo-run-42", "-o", "name")
    assert picked.stdout == "group/grpo-run-43\ngroup/grpo-run-42\n"
    by_priority = costart(
        "--store", store, "get", "groups", "--sort-by", ".priority", "-o",
        'jsonpath={.items[*].name}{"\\n"}{.items[0].priority}',
    )  # fmt: skip
    assert by_priority.stdout == "grpo-run-43 grpo-run-42\n5\n"
    missing = costart("--store", store, "get", "groups", "grpo-run-42", "nope")
    assert missing.exit_code == 4 and lines(missing.stderr) == ["error: no group named 'nope'"]
    bad = costart("--store", store, "get", "groups", "-o", "xml")
    assert bad.exit_code == EXIT_USAGE
    assert lines(bad.stderr) == [
        "error: bad --output 'xml': use table, wide, json, yaml, name, jsonpath=TEMPLATE or "
        "custom-columns=HEADER:.path,..."
    ]


def test_describe_member_shows_one_member_line_by_line(reserving_store):
    result = costart("--store", str(reserving_store), "describe", "member", "grpo-run-42/trainer")
    assert result.exit_code == 0, result.output
    assert lines(result.stdout) == [
        "Name:       grpo-run-42/trainer",
        "Kind:       job",
        "Owner:      alice",
        "Profile:    trainer:2.5",
        "State:      HELD",
        "Tasks:      0/4 placed (start quorum 4, run floor 4), 1 held on h100-0000",
        "Nodes:      -",
        "Claims:     dataset:PENDING gpus:PENDING",
        "Restarts:   0, failed replicas 0",
        "Reason:     -",
    ]
    bad = costart("--store", str(reserving_store), "describe", "member", "grpo-run-42")
    assert lines(bad.stderr) == [
        "error: bad member 'grpo-run-42': write GROUP/MEMBER or member/GROUP/MEMBER"
    ]


def test_version_and_every_table_in_one_style(reserving_store):
    from costart import __version__

    assert costart("--version").stdout == f"costart {__version__}\n"
    store = str(reserving_store)
    for command in (("get", "groups"), ("get", "members"), ("get", "holds")):
        header = lines(costart("--store", store, *command).stdout)[0]
        assert header == header.upper() and "│" not in header and "┃" not in header
