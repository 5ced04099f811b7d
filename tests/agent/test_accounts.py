"""The agents' accounts file: which OS account runs each owner's tasks (docs/design.md §11)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from costart.agent.accounts import Account, AccountRefused, Accounts, AccountsError
from tests.agent.root import ALICE_UID, BOB_UID, SHARED_GID, require_root


def table(tmp_path: Path, text: str, *, allow_root: bool = False) -> Accounts:
    path = tmp_path / "accounts.toml"
    path.write_text(text)
    return Accounts.from_toml(path, allow_root=allow_root)


def test_numeric_accounts_need_no_passwd_entry_and_are_each_owners_own(tmp_path):
    require_root()
    accounts = table(
        tmp_path,
        f"[owners.alice]\nuid = {ALICE_UID}\ngid = {SHARED_GID}\ngroups = [7, 7, 5]\n"
        f"[owners.bob]\nuid = {BOB_UID}\n",
    )
    alice = accounts.resolve("alice")
    assert (alice.uid, alice.gid, alice.groups, alice.shared) == (
        ALICE_UID,
        SHARED_GID,
        (5, 7),
        False,
    )
    assert alice.switches and alice.popen_kwargs() == {
        "user": ALICE_UID,
        "group": SHARED_GID,
        "extra_groups": [5, 7],
    }
    bob = accounts.resolve("bob")
    assert (bob.uid, bob.gid) == (BOB_UID, BOB_UID)  # gid defaults to the uid


def test_an_account_mapped_for_two_owners_or_the_agents_own_is_shared(tmp_path):
    require_root()
    accounts = table(
        tmp_path,
        f"[owners.a]\nuid = {ALICE_UID}\n[owners.b]\nuid = {ALICE_UID}\n"
        f"[owners.c]\nuid = {BOB_UID}\n[owners.ops]\nagent = true\n",
        allow_root=True,
    )
    assert [accounts.resolve(o).shared for o in ("a", "b", "c", "ops")] == [
        True,
        True,
        False,
        True,
    ]
    ops = accounts.resolve("ops")
    assert not ops.switches and ops.popen_kwargs() == {}


def test_an_owner_without_an_entry_is_refused_naming_it(tmp_path):
    accounts = table(tmp_path, "[owners.ops]\nagent = true\n", allow_root=True)
    with pytest.raises(AccountRefused, match="no OS account for owner 'mallory'"):
        accounts.resolve("mallory")
    with pytest.raises(AccountRefused, match="no OS account"):
        Accounts({}).resolve("alice")  # no file at all: nobody runs


def test_root_is_refused_unless_the_agent_allows_it(tmp_path):
    require_root()
    text = "[owners.ops]\nuid = 0\n"
    with pytest.raises(AccountRefused, match=r"maps to root.*--allow-root"):
        table(tmp_path, text).resolve("ops")
    assert table(tmp_path, text, allow_root=True).resolve("ops").uid == 0
    # The agent's own account is root here: choosing it is choosing root.
    with pytest.raises(AccountRefused, match="maps to root"):
        table(tmp_path, "[owners.ops]\nagent = true\n").resolve("ops")


def test_an_agent_that_is_not_root_refuses_a_table_that_switches_at_start(tmp_path, monkeypatch):
    # As an agent of uid 1000 sees it (the tests themselves may be root).
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os, "getegid", lambda: 1000)
    with pytest.raises(AccountsError, match=r"'alice' runs as .*only an agent running as root"):
        table(tmp_path, f"[owners.alice]\nuid = {ALICE_UID}\n")
    own = table(tmp_path, "[owners.alice]\nuid = 1000\n").resolve("alice")
    assert not own.switches and own.shared  # its own account: nothing to switch, shared


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[owners.a]\n", "set exactly one of uid, user, agent"),
        ("[owners.a]\nuid = 5\nagent = true\n", "set exactly one of uid, user, agent"),
        ("[owners.a]\nuid = -1\n", "not between 0 and"),
        ("[owners.a]\nuid = 5\ngroups = [4294967295]\n", "not between 0 and"),
        ('[owners.a]\nuser = "no-such-account-here"\n', "no OS account named"),
        ('[owners.a]\nuser = "root"\ngid = 5\n', "takes gid and groups from the system"),
        ("[owners.a]\nagent = true\ngroups = [5]\n", "takes no gid or groups"),
        ('[owners.a]\nuid = 5\nshell = "/bin/sh"\n', "unknown field"),
        ('same_name = "yes"\n', "Expected `bool`"),
        ("[owners.a\n", "accounts file"),
    ],
)
def test_a_bad_accounts_file_names_the_entry(tmp_path, text, message):
    with pytest.raises(AccountsError, match=message) as raised:
        table(tmp_path, text, allow_root=True)
    assert str(tmp_path / "accounts.toml") in str(raised.value)


@pytest.fixture
def os_account() -> Iterator[str]:
    """A real OS account made for the test (useradd), removed after it."""
    require_root()
    if shutil.which("useradd") is None:
        pytest.fail("useradd is needed for the same-name account test")
    name = "costart-t1"
    subprocess.run(["userdel", name], capture_output=True, check=False)
    subprocess.run(["useradd", "--no-create-home", "--uid", str(ALICE_UID + 100), name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, check=False)


def test_same_name_accounts_and_named_accounts_come_from_the_system(tmp_path, os_account):
    uid = ALICE_UID + 100
    opted_in = table(tmp_path, "same_name = true\n")
    found = opted_in.resolve(os_account)
    assert (found.uid, found.name, found.shared) == (uid, os_account, False)
    assert found.gid in found.groups  # the system's group list holds the primary group
    with pytest.raises(AccountRefused, match="no OS account"):
        table(tmp_path, "").resolve(os_account)  # not without the operator's opt-in
    named = table(tmp_path, f'[owners.alice]\nuser = "{os_account}"\n').resolve("alice")
    assert named == Account("alice", uid, found.gid, found.groups, os_account, found.home, False)


def test_the_readmes_accounts_example_reads_as_the_readme_says(tmp_path):
    require_root()
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme[readme.index("### Security: who may do what on a node") :]
    block = section[section.index("```toml") + len("```toml") : section.index("```\n")]
    text = "\n".join(line.strip() for line in block.splitlines())
    accounts = table(tmp_path, text, allow_root=True)
    assert accounts.resolve("alice")[1:4] == (2001, 2001, (3000,))
    assert accounts.resolve("guest").name == "nobody"
    assert accounts.resolve("ci").shared and not accounts.same_name
