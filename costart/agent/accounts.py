"""Which OS account runs a group owner's tasks (docs/design.md §11): the agent's accounts file.

```toml
# costart agent --accounts accounts.toml
same_name = false          # an owner with no entry runs as the OS account of that name

[owners.alice]             # by number: no passwd entry needed
uid = 2001
gid = 2001
groups = [3000]            # supplementary groups (default: none)

[owners.bob]
user = "bob"               # the OS account of this name (uid, gid, groups from the system)

[owners.ci]
agent = true               # the agent's own account, by the operator's choice
```

A task and its exec probes run as its owner's account; never as the agent's own unless
the operator maps the owner to it (``agent = true``); never as root unless the agent was
started with ``--allow-root``. An owner with no entry (and no same-name account) is
refused on the node: the task fails with reason ``refused`` and a note naming why.

An account is *shared* when it is root, the agent's own, or mapped for more than one
owner: what its tasks are given (environment names that change how programs load)
can harm others, so the agent's allow list decides (`costart.agent.taskenv`).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, NamedTuple

import msgspec

from costart.agent.model import Refused
from costart.rest.toml_config import read_toml

ROOT_UID: Final = 0
MAX_ID: Final = 2**32 - 2  # (uid_t)-1 means "unchanged" to the kernel


class AccountRefused(Refused):
    """No account this node may use for the owner (the message says why)."""


class Account(NamedTuple):
    """The OS account one owner's tasks run as."""

    owner: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    name: str | None  # the passwd name, if the account has one
    home: str | None
    shared: bool

    @property
    def switches(self) -> bool:
        """True when running as it means changing from the agent's own credentials."""
        return (self.uid, self.gid) != (os.geteuid(), os.getegid())

    def popen_kwargs(self) -> dict[str, Any]:
        """`subprocess.Popen` arguments that run the child as this account (none when it
        is the agent's own). The switch happens in the child before ``preexec_fn``."""
        if not self.switches:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": list(self.groups)}

    def describe(self) -> str:
        who = f"{self.name} " if self.name else ""
        return f"{who}(uid {self.uid}, gid {self.gid})"


class _OwnerDoc(msgspec.Struct, forbid_unknown_fields=True):
    uid: int | None = None
    gid: int | None = None
    groups: list[int] = msgspec.field(default_factory=list)
    user: str | None = None
    agent: bool = False


class _AccountsDoc(msgspec.Struct, forbid_unknown_fields=True):
    same_name: bool = False
    owners: dict[str, _OwnerDoc] = msgspec.field(default_factory=dict)


class AccountsError(ValueError):
    """The accounts file is unreadable or invalid (names the file and the entry)."""


class Accounts:
    """Owner -> `Account`, from the operator's table (and same-name accounts if asked)."""

    def __init__(
        self,
        table: Mapping[str, Account],
        *,
        same_name: bool = False,
        allow_root: bool = False,
    ) -> None:
        self._table = dict(table)
        self.same_name = same_name
        self.allow_root = allow_root

    @classmethod
    def from_toml(cls, path: Path, *, allow_root: bool = False) -> Accounts:
        doc = read_toml(path, _AccountsDoc, "accounts file", AccountsError)
        found: dict[str, Account] = {}
        for owner in sorted(doc.owners):
            found[owner] = _entry(path, owner, doc.owners[owner])
        uids: dict[int, list[str]] = {}
        for owner, account in found.items():
            uids.setdefault(account.uid, []).append(owner)
        agent_uid = os.geteuid()
        for owner, account in list(found.items()):
            shared = account.uid in (ROOT_UID, agent_uid) or len(uids[account.uid]) > 1
            found[owner] = account._replace(shared=shared)
        table = cls(found, same_name=doc.same_name, allow_root=allow_root)
        table.check_can_switch(path)
        return table

    @classmethod
    def agents_own(cls, owners: list[str], *, allow_root: bool = False) -> Accounts:
        """Every owner in ``owners`` on the agent's own account (a one-machine demo)."""
        return cls({owner: _agents_own(owner) for owner in owners}, allow_root=allow_root)

    def check_can_switch(self, where: Path | str) -> None:
        """An agent that is not root cannot run a task as another account: say so at
        start, not at the first task."""
        if os.geteuid() == ROOT_UID:
            return
        for owner, account in sorted(self._table.items()):
            if account.switches:
                raise AccountsError(
                    f"accounts file {where}: owner {owner!r} runs as {account.describe()}, "
                    "and only an agent running as root can switch accounts"
                )

    def resolve(self, owner: str) -> Account:
        """The account ``owner``'s tasks run as; `AccountRefused` naming why not."""
        account = self._table.get(owner)
        if account is None and self.same_name:
            account = _same_name(owner)
        if account is None:
            raise AccountRefused(
                f"no OS account for owner {owner!r} on this node (the agent's accounts "
                "file has no entry for it)"
            )
        if account.uid == ROOT_UID and not self.allow_root:
            raise AccountRefused(
                f"owner {owner!r} maps to root; the agent runs no task as root unless "
                "started with --allow-root"
            )
        if account.switches and os.geteuid() != ROOT_UID:
            raise AccountRefused(
                f"owner {owner!r} maps to {account.describe()}; this agent is not root "
                "and cannot switch accounts"
            )
        return account


def _entry(path: Path, owner: str, doc: _OwnerDoc) -> Account:
    where = f"accounts file {path}: owners.{owner}"
    given = [k for k, v in (("uid", doc.uid), ("user", doc.user)) if v is not None]
    if doc.agent:
        given.append("agent")
    if len(given) != 1:
        raise AccountsError(f"{where}: set exactly one of uid, user, agent (got {given or 'none'})")
    if doc.agent:
        if doc.gid is not None or doc.groups:
            raise AccountsError(f"{where}: agent = true takes no gid or groups")
        return _agents_own(owner)
    if doc.user is not None:
        if doc.gid is not None or doc.groups:
            raise AccountsError(f"{where}: user = ... takes gid and groups from the system")
        try:
            return _by_name(owner, doc.user)
        except KeyError:
            raise AccountsError(f"{where}: no OS account named {doc.user!r}") from None
    assert doc.uid is not None
    gid = doc.uid if doc.gid is None else doc.gid
    for label, value in (("uid", doc.uid), ("gid", gid), *(("groups", g) for g in doc.groups)):
        if not 0 <= value <= MAX_ID:
            raise AccountsError(f"{where}: {label} {value} is not between 0 and {MAX_ID}")
    try:
        entry: pwd.struct_passwd | None = pwd.getpwuid(doc.uid)
    except KeyError:
        entry = None
    return Account(
        owner=owner,
        uid=doc.uid,
        gid=gid,
        groups=tuple(sorted(set(doc.groups))),
        name=entry.pw_name if entry else None,
        home=entry.pw_dir if entry else None,
        shared=False,
    )


def _by_name(owner: str, name: str) -> Account:
    entry = pwd.getpwnam(name)
    groups = tuple(sorted(set(os.getgrouplist(name, entry.pw_gid))))
    return Account(owner, entry.pw_uid, entry.pw_gid, groups, name, entry.pw_dir, False)


def _same_name(owner: str) -> Account | None:
    try:
        account = _by_name(owner, owner)
    except KeyError:
        return None
    return account._replace(shared=account.uid in (ROOT_UID, os.geteuid()))


def _agents_own(owner: str) -> Account:
    uid, gid = os.geteuid(), os.getegid()
    try:
        entry: pwd.struct_passwd | None = pwd.getpwuid(uid)
    except KeyError:
        entry = None
    groups = tuple(sorted(set(os.getgroups())))
    return Account(
        owner,
        uid,
        gid,
        groups,
        entry.pw_name if entry else None,
        entry.pw_dir if entry else None,
        True,
    )
