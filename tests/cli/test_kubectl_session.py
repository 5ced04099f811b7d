"""A scripted session against a real `costart serve` on 127.0.0.1, every call a real CLI
process, written the way a kubectl user types (issue 32): global flags after the
command, ``-o name`` output fed back to every command that takes a name, custom columns,
set-based selectors, watches that keep their format, completion of names, and a closed
pipe that ends quietly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import child_processes
from tests.cli.conftest import ADMIN, DEMO_SPEC, ROOT, cli_env, run_cli
from tests.cli.table_cells import read_rows
from tests.rest.serving import DEADLINE_S


@pytest.fixture(scope="module")
def session(live_server, tmp_path_factory):
    """(remote flags, a directory for specs); two labelled groups submitted beside
    grpo-run-42 (no labels)."""
    remote = ["--server", live_server, "--token", ADMIN]
    tmp = tmp_path_factory.mktemp("session")
    for name, labels in (("rl-prod", 'team = "rl", env = "prod"'), ("sl-dev", 'team = "sl"')):
        spec = tmp / f"{name}.toml"
        spec.write_text(
            DEMO_SPEC.read_text().replace(
                'name = "grpo-run-42"', f'name = "{name}"\nlabels = {{ {labels} }}'
            )
        )
        done = run_cli("submit", str(spec), *remote, "-o", "name")  # flags after the command
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"group/{name}\n"
    return remote, tmp


def ok(*args: str) -> str:
    done = run_cli(*args)
    assert done.returncode == 0, (args, done.stderr)
    # A submit may warn about its spec (`costart.domain.spec_advice`); nothing else.
    said = done.stderr.splitlines()
    if args[0] == "submit":
        said = [line for line in said if not line.startswith("warning: members[")]
    assert said == [], (args, done.stderr)
    return done.stdout


def test_names_printed_by_o_name_are_taken_back_by_every_command(session):
    remote, _ = session
    names = ok("get", "groups", *remote, "-o", "name").split()
    assert names == ["group/grpo-run-42", "group/rl-prod", "group/sl-dev"]
    group = names[0]
    assert ok("get", "group", group, *remote, "-o", "name") == f"{group}\n"  # singular type
    assert ok("describe", "group", group, *remote).startswith("Name:       grpo-run-42\n")
    assert ok("describe", "groups", group, *remote, "-o", "name") == f"{group}\n"
    assert ok("why", group, *remote, "-o", "jsonpath={.group}") == "grpo-run-42\n"
    events = ok("events", group, *remote, "-o", "name").split()
    assert events and all(e.startswith("event/grpo-run-42/") for e in events)
    members = ok("get", "members", group, *remote, "-o", "name").split()
    assert members == [
        "member/grpo-run-42/trainer",
        "member/grpo-run-42/rollout",
        "member/grpo-run-42/reward",
        "member/grpo-run-42/reference",
    ]
    assert ok("describe", "member", members[1], *remote).startswith(
        "Name:       grpo-run-42/rollout\n"
    )
    scaled = ok("scale", members[2], "--replicas", "3", *remote)
    assert scaled.startswith("member/grpo-run-42/reward scaled to 3 ")
    wrong = run_cli("describe", "group", members[0], *remote)
    assert wrong.returncode == 2
    assert wrong.stderr == ("error: 'member/grpo-run-42/trainer' names a member, not a group\n")


def test_custom_columns_no_headers_and_sort_by_a_column(session):
    remote, _ = session
    columns = "custom-columns=NAME:.name,TEAM:.labels.team,PRIORITY:.priority"
    table = ok("get", "groups", *remote, "-o", columns, "--sort-by", "name")
    assert table.splitlines() == [
        "NAME         TEAM    PRIORITY",
        "grpo-run-42  <none>  10      ",
        "rl-prod      rl      10      ",
        "sl-dev       sl      10      ",
    ]
    bare = ok("get", "groups", *remote, "-o", columns, "--no-headers", "--sort-by", "NAME")
    # Without the header, columns are as wide as their widest cell.
    assert [line.rstrip() for line in bare.splitlines()] == [
        "grpo-run-42  <none>  10",
        "rl-prod      rl      10",
        "sl-dev       sl      10",
    ]
    miss = run_cli("get", "groups", *remote, "--sort-by", ".agee")
    assert miss.returncode == 2
    assert miss.stderr.startswith("error: bad --sort-by '.agee': sort by one of NAME, OWNER,")
    assert ".submitted_at_ns" in miss.stderr  # the fields are listed too
    typo = run_cli("get", "groups", *remote, "-o", "custom-columns=N:.nmae")
    assert typo.returncode == 2 and "no field 'nmae'" in typo.stderr and ".name" in typo.stderr


def test_set_based_selectors_on_groups_and_members(session):
    remote, _ = session

    def picked(kind: str, *selector: str) -> list[str]:
        return ok("get", kind, *remote, "-o", "name", *selector).split()

    assert picked("groups", "-l", "team in (rl,sl)") == ["group/rl-prod", "group/sl-dev"]
    assert picked("groups", "-l", "team notin (rl)") == ["group/grpo-run-42", "group/sl-dev"]
    assert picked("groups", "-l", "!team") == ["group/grpo-run-42"]
    assert picked("groups", "-l", "env") == ["group/rl-prod"]
    assert picked("groups", "-l", "team,env!=prod") == ["group/sl-dev"]
    assert picked("groups", "-l", "team=rl", "-l", "env==prod") == ["group/rl-prod"]
    members = picked("members", "-l", "team in (sl)")
    assert members and all(m.startswith("member/sl-dev/") for m in members)
    bad = run_cli("get", "members", *remote, "-l", "team in rl")
    assert bad.returncode == 2 and bad.stderr.startswith("error: bad label selector 'team in rl'")


def test_a_closed_pipe_ends_quietly_with_exit_0(session):
    remote, _ = session
    get_names = ["costart.cli.main", "get", "groups", *remote, "-o", "name"]
    reader, writer = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "costart.cli.main", "get", "groups", *remote, "-o", "name"],
        env=cli_env(),
        stdout=writer,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(writer)
    os.close(reader)  # closed before the process (still starting) writes anything
    _, stderr = process.communicate(timeout=60)
    assert (process.returncode, stderr) == (0, "")
    shell = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" | head -1', "-", sys.executable, "-m", *get_names],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (shell.returncode, shell.stdout, shell.stderr) == (0, "group/grpo-run-42\n", "")


def test_completion_offers_group_and_member_names_from_the_server(session):
    remote, _ = session
    script = Path(sys.executable).parent / "costart"

    def complete(*words: str) -> list[str]:
        env = cli_env(
            _COSTART_COMPLETE="complete_bash",
            COMP_WORDS=" ".join(["costart", *words]),
            COMP_CWORD=str(len(words)),
        )
        done = subprocess.run(
            [sys.executable, str(script)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    assert complete("describe", "group", *remote, "rl") == ["rl-prod"]
    assert complete(*remote, "events", "group/s") == ["group/sl-dev"]
    assert complete("describe", "member", *remote, "sl-dev/re") == [
        "sl-dev/reward",
        "sl-dev/reference",
    ]
    # Node names come from the cluster file (--cluster, the demo cluster by default).
    nodes = complete("agent", "--node", "h100-001")
    assert nodes == [f"h100-001{i}" for i in range(10)]
    assert complete("--cluster", str(ROOT / "nope.toml"), "agent", "--node", "h") == []
    # A server that does not answer completes nothing, quietly and quickly.
    silent = complete("describe", "group", "--server", "http://127.0.0.1:9", "g")
    assert silent == []


def follow(command: list[str], act, wanted: str, times: int = 1) -> list[str]:
    """Lines of a following command until ``times`` of them contain ``wanted`` (bounded);
    ``act()`` runs once the first line is out."""
    process = child_processes.popen(
        command, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + DEADLINE_S
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if len(lines) == 1:
                act()
            seen = sum(wanted in printed for printed in lines)
            if seen >= times or time.monotonic() > deadline:
                break
    finally:
        process.kill()
        process.wait(timeout=10)
    return lines


def test_watches_keep_one_format_and_honour_o(session):
    remote, tmp = session
    main = [sys.executable, "-m", "costart.cli.main"]
    spec = tmp / "watched.toml"
    spec.write_text(DEMO_SPEC.read_text().replace('name = "grpo-run-42"', 'name = "watched"'))
    wide = follow(
        [*main, "get", "groups", "-w", "-o", "wide", *remote],
        lambda: ok("submit", str(spec), *remote),
        "watched",
    )
    header, rows = wide[0], wide[1:]
    assert header.split()[:6] == ["NAME", "OWNER", "STATE", "RUNNING", "ATTEMPT", "PRIORITY"]
    assert any(r.startswith("watched ") for r in rows)
    # Every row, watched or listed first, under the same columns; a cell wider than its
    # column so far (the watched group's "barrier in 4m59s" under a list of "-") widens
    # that column from then on, as the table promises.
    for row, cells in zip(rows, read_rows(header, rows), strict=True):
        assert all(cell and not cell.startswith(" ") for cell in cells), (header, row, cells)


def test_members_watch_prints_names_and_events_follow_keeps_its_columns(session):
    remote, tmp = session
    main = [sys.executable, "-m", "costart.cli.main"]
    spec = tmp / "followed.toml"
    spec.write_text(DEMO_SPEC.read_text().replace('name = "grpo-run-42"', 'name = "followed"'))
    ok("submit", str(spec), *remote)
    named = follow(
        [*main, "get", "members", "group/followed", "-w", "-o", "name", *remote],
        lambda: ok("scale", "member/followed/reward", "--replicas", "3", *remote),
        "member/followed/reward",
        times=2,
    )
    assert all(line.startswith("member/followed/") for line in named), named
    assert named.count("member/followed/reward") >= 2  # listed, then again after the scale
    timeline = follow(
        [*main, "events", "followed", "-f", *remote],
        lambda: ok("cancel", "followed", *remote),
        "GroupCancelled",
    )
    base, header = timeline[0], timeline[1]
    # The TIME column's origin, said first (ADR 0082).
    assert re.fullmatch(r"times: \+offset from followed's submission at \S+Z", base), base
    assert header.split() == ["POS", "TIME", "EVENT", "MEMBER", "BY", "DETAIL"]
    rows = timeline[2:]  # the listed rows and the followed ones, in one table
    for row, cells in zip(rows, read_rows(header, rows), strict=True):
        assert all(cell and not cell.startswith(" ") for cell in cells), (header, row, cells)
        if "GroupCancelled" in row:
            assert cells[4] == "user:root"  # the BY column, kept in the followed rows
            assert cells[5] != ""  # and the DETAIL column ("-": none)
    assert any("GroupCancelled" in row for row in timeline[2:])


def test_global_flags_after_the_command_on_a_local_store(tmp_path):
    store = tmp_path / "store"
    ok("submit", "--create", str(DEMO_SPEC), "--store", str(store))
    assert ok("get", "groups", "--store", str(store), "-o", "name") == "group/grpo-run-42\n"
    assert ok("get", "groups", "-o", "name", f"--store={store}") == "group/grpo-run-42\n"
    # The forensics take the printed name too.
    why = ok("replay", "why", "group/grpo-run-42", "--at", "3", "--store", str(store))
    base, answer = why.split("\n", 1)  # the first line states the time base (ADR 0082)
    assert base.startswith("times: ISO-8601 UTC, and +offset from grpo-run-42's submission")
    assert answer.startswith("grpo-run-42: PENDING at ")
    timeline = ok("replay", "timeline", "groups/grpo-run-42", "--store", str(store))
    assert timeline.startswith("times: ISO-8601 UTC, and +offset from grpo-run-42's submission")
    assert "group  PENDING@+0s" in timeline
    # A command's own option of the same name stays the command's.
    valid = run_cli("validate", str(DEMO_SPEC), "--cluster", str(ROOT / "nope.toml"))
    assert valid.returncode != 0 and "nope.toml" in valid.stderr
