"""Where the agent keeps its ledger: outside the work directory, in a directory that is
its own (`costart.agent.state_dir`, docs/design.md §11)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from costart.agent.state_dir import StateDirRefused, default_state_dir, prepare_state_dir
from tests.agent.root import require_root


@pytest.mark.parametrize(
    ("euid", "environ", "expected"),
    [
        (0, {"XDG_STATE_HOME": "/xdg"}, Path("/var/lib/costart-agent/n1+n2")),
        (1000, {"XDG_STATE_HOME": "/xdg"}, Path("/xdg/costart-agent/n1+n2")),
        (1000, {}, Path.home() / ".local/state/costart-agent/n1+n2"),
        (1000, {"XDG_STATE_HOME": "relative"}, Path.home() / ".local/state/costart-agent/n1+n2"),
    ],
    ids=["root", "xdg", "no-xdg", "relative-xdg-ignored"],
)
def test_the_default_state_dir_is_the_agents_own_and_names_its_nodes(euid, environ, expected):
    assert default_state_dir(["n2", "n1"], euid=euid, environ=environ) == expected


def test_the_default_state_dir_is_not_under_the_work_dir(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    for euid in (0, os.geteuid(), 1000):
        default = default_state_dir(["n1"], euid=euid, environ={})
        assert work not in default.parents and default != work


def test_a_missing_state_dir_is_made_private(tmp_path):
    state = prepare_state_dir(tmp_path / "deep" / "state", tmp_path / "work")
    assert state == tmp_path / "deep" / "state"
    assert state.stat().st_mode & 0o777 == 0o700
    assert prepare_state_dir(state, tmp_path / "work") == state  # and taken again as it is


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701, 0o770, 0o707])
def test_a_state_dir_others_may_enter_is_refused_naming_it_and_its_mode(tmp_path, mode):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(mode)
    with pytest.raises(StateDirRefused, match=f"--state-dir {state}: open to others.*{mode:04o}"):
        prepare_state_dir(state, tmp_path / "work")


def test_a_state_dir_that_is_a_link_or_a_file_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(StateDirRefused, match="a symbolic link"):
        prepare_state_dir(tmp_path / "link", tmp_path / "work")
    (tmp_path / "file").write_text("")
    with pytest.raises(StateDirRefused, match="not a directory"):
        prepare_state_dir(tmp_path / "file", tmp_path / "work")


def test_a_state_dir_of_another_account_is_refused(tmp_path):
    require_root()  # giving it away
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 65534, 65534)
    with pytest.raises(StateDirRefused, match="owned by another account"):
        prepare_state_dir(state, tmp_path / "work")


def test_a_state_dir_in_the_work_dir_is_refused_before_anything_is_made(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "to-work").symlink_to(work)
    for inside in (work, work / ".costart-agent" / "n1", tmp_path / "to-work" / "state"):
        with pytest.raises(StateDirRefused, match="inside the work directory"):
            prepare_state_dir(inside, work)
    assert list(work.iterdir()) == []
