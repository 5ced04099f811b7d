"""The CLI against a store: output, exit codes, and reads that never fold the whole log.

The store is eventsourcing's SQLite module (selected by the environment, which
``--store`` respects), so these tests do not depend on the LMDB store.
"""

from __future__ import annotations

import getpass
import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from costart import bootstrap as bootstrap_module
from costart.bootstrap import Settings, bootstrap
from costart.cli.main import DEMO_SPEC, app
from costart.cli.rows import age_reference
from costart.display import WALL_CLOCK_FLOOR_NS
from costart.domain.actors import Actor
from costart.domain.decisions import SetPendReason
from costart.domain.events import PendReason
from tests.builders import USER, full_placement, ready, start

runner = CliRunner()


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.sqlite")
    monkeypatch.setenv("SQLITE_DBNAME", str(tmp_path / "events.sqlite"))
    return tmp_path / "store"


def costart(store, *args: str):
    return runner.invoke(app, ["--store", str(store), *args])


def test_submit_then_get_groups_lists_it_in_every_output_format(store):
    submitted = costart(store, "submit", "--create", str(DEMO_SPEC))
    assert submitted.exit_code == 0, submitted.output
    assert "group/grpo-run-42 submitted (PENDING)" in submitted.stdout
    table = costart(store, "get", "groups")
    assert table.exit_code == 0 and "grpo-run-42" in table.stdout and "PENDING" in table.stdout
    wide = costart(store, "get", "groups", "-o", "wide")
    assert "reserve" in wide.stdout and "0/16" in wide.stdout
    rows = json.loads(costart(store, "get", "groups", "-o", "json").stdout)
    assert [(g["name"], g["state"], g["members"]) for g in rows] == [("grpo-run-42", "PENDING", 4)]
    assert (
        yaml.safe_load(costart(store, "get", "groups", "-o", "yaml").stdout)[0]["owner"] == "alice"
    )
    assert json.loads(costart(store, "get", "groups", "--owner", "bob", "-o", "json").stdout) == []
    assert (
        json.loads(costart(store, "get", "groups", "--state", "running", "-o", "json").stdout) == []
    )


def test_get_members_shows_kind_owner_profile_and_claims(store):
    costart(store, "submit", "--create", str(DEMO_SPEC))
    members = json.loads(costart(store, "get", "members", "grpo-run-42", "-o", "json").stdout)
    assert [(m["name"], m["kind"], m["owner"]) for m in members][:2] == [
        ("trainer", "job", "alice"),
        ("rollout", "replica-set", "rollout-team"),
    ]
    table = costart(store, "get", "members").stdout
    assert "vllm:0.11" in table and "gpus:PENDING" in table


def test_describe_shows_the_pend_reason_with_its_numbers_and_recent_events(store):
    costart(store, "submit", "--create", str(DEMO_SPEC))
    controller = bootstrap(Settings(store=str(store), cluster=None))
    reason = PendReason(
        cls="topology",
        message="rollout: 8×{gpu:1} in one block; best block b3 has 5 free after trainer",
        member="rollout",
        need="8×{gpu:1} in one block",
        best="b3: 5 free",
        queue_position=2,
    )
    controller.apply_decisions([SetPendReason(group="grpo-run-42", reason=reason)])
    described = costart(store, "describe", "group", "grpo-run-42")
    assert described.exit_code == 0, described.output
    lines = [line.rstrip() for line in described.stdout.splitlines()]
    # Whole lines: the reason, its numbers, and the queue position counted from 1.
    reason_lines = [
        "Pending:    topology: rollout: 8×{gpu:1} in one block; best block b3 has 5 free "
        "after trainer",
        "  member:   rollout",
        "  needs:    8×{gpu:1} in one block",
        "  best:     b3: 5 free",
        "  queue:    #3 (behind 2 groups)",
    ]
    start = lines.index(reason_lines[0])
    assert lines[start : start + len(reason_lines)] == reason_lines
    for heading in ("Members", "Holds", "Pend-reason history", "Recent events"):
        assert any(line.split(" (")[0] == heading for line in lines), heading
    assert any(line.split()[2:3] == ["PendReasonChanged"] for line in lines)
    why = costart(store, "why", "grpo-run-42", "-o", "json")
    assert json.loads(why.stdout)["pend_reason"]["queue_position"] == 2
    events = costart(store, "events", "grpo-run-42").stdout
    assert "MemberCreated" in events and "rollout" in events


def test_reads_catch_the_views_up_without_building_a_controller(store, monkeypatch):
    costart(store, "submit", "--create", str(DEMO_SPEC))
    writer = bootstrap(Settings(store=str(store), cluster=None))
    writer.cancel("grpo-run-42", actor=USER)  # another process writes

    def no_controller(*_args, **_kwargs):
        raise AssertionError("a read built a Controller (folding the whole log)")

    # Every Controller the CLI builds comes from the composition root.
    monkeypatch.setattr(bootstrap_module, "bootstrap", no_controller)
    rows = json.loads(costart(store, "get", "groups", "-o", "json").stdout)
    assert rows[0]["state"] == "CANCELLED"


def test_cancel_then_cancel_again_is_a_conflict(store):
    costart(store, "submit", "--create", str(DEMO_SPEC))
    first = costart(store, "cancel", "grpo-run-42")
    assert first.exit_code == 0 and "group/grpo-run-42 cancelled" in first.stdout
    again = costart(store, "cancel", "grpo-run-42")
    assert again.exit_code == 5 and again.stderr.startswith("error:")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (("describe", "group", "nope"), 4, "no group named 'nope'"),
        (("events", "nope"), 4, "no group named"),
        (("cancel", "nope"), 4, "no group named"),
    ],
)
def test_unknown_groups_exit_4_with_a_message_on_stderr(store, args, code, message):
    costart(store, "submit", "--create", str(DEMO_SPEC))  # the store exists; the group does not
    result = costart(store, *args)
    assert result.exit_code == code and message in result.stderr and result.stdout == ""


def test_an_invalid_spec_exits_3_naming_the_field_and_writes_nothing(store, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\nowner = "alice"\n[[members]]\nname = "a"\nkind = "job"\ntasks = -2\nshape = { gpu = 1 }\n'
    )
    result = costart(store, "submit", "--create", str(bad))
    assert result.exit_code == 3 and "members[0].tasks" in result.stderr
    assert json.loads(costart(store, "get", "groups", "-o", "json").stdout) == []


def test_a_second_live_group_of_the_same_name_exits_5(store):
    costart(store, "submit", "--create", str(DEMO_SPEC))
    result = costart(store, "submit", "--create", str(DEMO_SPEC))
    assert result.exit_code == 5 and "already exists" in result.stderr


def test_without_a_store_or_server_the_cli_exits_2(monkeypatch):
    monkeypatch.delenv("COSTART_STORE", raising=False)
    monkeypatch.delenv("COSTART_SERVER", raising=False)
    result = runner.invoke(app, ["get", "groups"])
    assert result.exit_code == 2 and "--store" in result.stderr


def test_store_selects_the_lmdb_module_unless_the_environment_names_one(tmp_path, monkeypatch):
    monkeypatch.delenv("PERSISTENCE_MODULE", raising=False)
    settings = Settings(store=str(tmp_path))
    env = settings.controller_env()
    assert env["PERSISTENCE_MODULE"] == "costart.store"
    assert env["COSTART_LMDB_PATH"] == str(tmp_path)
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.sqlite")
    assert settings.controller_env()["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"


def test_validate_and_demo_still_work(tmp_path):
    assert runner.invoke(app, ["validate", str(DEMO_SPEC)]).exit_code == 0
    demo = runner.invoke(app, ["--store", str(tmp_path / "sim"), "demo"])
    assert demo.exit_code == 0, demo.stdout
    header = next(line for line in demo.stdout.splitlines() if line.startswith("FIGURE"))
    assert header.split() == ["FIGURE", "ATOMIC", "RESERVE", "INDEPENDENT"]
    assert "partial starts" in demo.stdout
    groups = runner.invoke(app, ["--store", str(tmp_path / "sim"), "get", "groups"])
    assert groups.exit_code == 0 and "grpo-000" in groups.stdout
    # The simulation's clock starts at 0: ages are simulated ones, not decades.
    assert not re.search(r"\b\d{3,}d\b", groups.stdout), groups.stdout
    walkthrough = runner.invoke(app, ["--store", str(tmp_path / "walk"), "demo", "--walkthrough"])
    assert walkthrough.exit_code == 0 and "SUCCEEDED" in walkthrough.stdout
    # No raw nanoseconds anywhere a person reads (`make demo` runs both).
    described = runner.invoke(
        app, ["--store", str(tmp_path / "sim"), "describe", "group", "grpo-000"]
    )
    for text in (demo.stdout, walkthrough.stdout, groups.stdout, described.stdout):
        assert not re.search(r"\b\d{10,}\b|t=\d+ns|\d+(ms|us)\d+ns", text), text
    again = runner.invoke(app, ["--store", str(tmp_path / "walk"), "demo"])
    assert again.exit_code == 0  # a demo store is made afresh
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("not a demo store")
    refused = runner.invoke(app, ["--store", str(tmp_path / "mine"), "demo"])
    assert refused.exit_code == 2 and (tmp_path / "mine" / "keep.txt").exists()


def test_ages_use_the_wall_clock_unless_the_log_runs_on_a_virtual_clock():
    def view(last_event_at_ns: int):
        return type("View", (), {"last_event_at_ns": last_event_at_ns})()

    wall = WALL_CLOCK_FLOOR_NS + 10**15
    assert age_reference([view(wall - 5)], wall) == wall
    assert age_reference([view(3_600 * 10**9), view(7_200 * 10**9)], wall) == 7_200 * 10**9
    assert age_reference([], wall) == wall


def test_describe_shows_each_task_and_events_show_who_did_it(store):
    costart(store, "submit", "--create", str(DEMO_SPEC))
    controller = bootstrap(Settings(store=str(store), cluster=None))
    spec = controller.group("grpo-run-42").spec
    controller.apply_decisions([full_placement(spec)])
    for member in spec.members:
        for claim in member.claims:
            ready(controller, f"grpo-run-42/{member.name}", claim)
    start(controller, "grpo-run-42/trainer")
    controller.task_failed(
        "grpo-run-42/trainer", 2, 1, "oom", exit_code=137, actor=Actor.agent("r1-n003")
    )
    controller.cancel("grpo-run-42", actor=Actor.user("bob"))
    out = costart(store, "describe", "group", "grpo-run-42").stdout
    assert "Tasks" in out and "ATTEMPT" in out
    row = next(line.split() for line in out.splitlines() if line.split()[:2] == ["trainer", "2"])
    assert row[2:6] == ["r1-n003", "1", "FAILED", "137"]
    events = costart(store, "events", "grpo-run-42").stdout
    submitter = f"user:{getpass.getuser()}"  # the direct CLI submits as the OS user
    assert "agent:r1-n003" in events and "user:bob" in events and submitter in events
    rows = json.loads(costart(store, "events", "grpo-run-42", "-o", "json").stdout)
    assert rows[-1]["event"] == "GroupCancelled" and rows[-1]["actor"] == "user:bob"


RUN_SPEC = """
name = "probed"
owner = "alice"
[[members]]
name = "trainer"
kind = "job"
tasks = 2
shape = { cpu = 1 }
claims = ["weights"]
[members.run]
argv = ["python3", "train.py", "--steps", "10"]
cwd = "work"
grace = "90s"
port = 9100
log_dir = "logs/costart"
env = { LOG_LEVEL = "info" }
[members.run.probes.weights]
file = "data/weights.bin"
period = "500ms"
fail_after = 3
"""


def test_describe_member_shows_the_run_table_and_each_tasks_log_file(store, tmp_path):
    spec_file = tmp_path / "probed.toml"
    spec_file.write_text(RUN_SPEC)
    assert costart(store, "submit", "--create", str(spec_file)).exit_code == 0
    controller = bootstrap(Settings(store=str(store), cluster=None))
    group = controller.group("probed")
    controller.apply_decisions([full_placement(group.spec)])
    out = costart(store, "describe", "member", "probed/trainer").stdout
    assert "Run:        python3 train.py --steps 10 (cwd work, grace 1m30s, ports 9100-9101)" in out
    assert "Env:        LOG_LEVEL=info" in out
    assert (
        "Probe:      weights: file data/weights.bin every 500ms (timeout 1.0s, FAILED after 3"
        in out
    )
    logs = [line for line in out.splitlines() if line.startswith("Log:")]
    assert len(logs) == 2
    assert logs[1].endswith(f"logs/costart/probed-{group.id}/trainer/1.attempt-1.log")
    member = json.loads(costart(store, "get", "members", "probed", "-o", "json").stdout)[0]
    assert member["run"]["argv"] == ["python3", "train.py", "--steps", "10"]
    assert member["tasks"][0]["log"] == f"logs/costart/probed-{group.id}/trainer/0.attempt-1.log"
