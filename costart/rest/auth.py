"""Bearer tokens: a TOML file maps each token (or its SHA-256) to a user and a role.

```toml
[tokens.3f1c...]              # the token itself is the key
user = "alice"
role = "owner"                # owner | admin | agent | claims ("user" is the old name of owner)

[tokens."sha256:9b74c9..."]   # or the token's SHA-256 (hex): a copy of the file lets no one in
user = "agent-rack-7"
role = "agent"
nodes = ["h100-0-0", "h100-0-1"]   # an agent acts for these nodes only
expires = "2027-01-31T00:00:00Z"   # optional, ISO-8601 with a zone: 401 naming it after
```

Tokens are random and long (at least 16 characters, `costart token new` makes 32 bytes),
so one SHA-256 is enough to make the file useless to a reader (ADR 0036): there is no
password to guess. Who may do what is `costart.rest.authz`. No or an unknown token is 401,
and so is an expired one (the answer names when it expired). A file readable by its group
or others that holds raw tokens gets a warning (`Tokens.warnings`). `serve` reads the file
again on SIGHUP (`Tokens.reload`): a file that no longer reads keeps the tokens it had.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

import msgspec

from costart.rest.toml_config import read_toml

Role = Literal["admin", "owner", "agent", "claims"]
BEARER: Final = "bearer "
HASH_PREFIX: Final = "sha256:"
MIN_TOKEN_CHARS: Final = 16
_SHA256_HEX_CHARS: Final = 64


class User(msgspec.Struct, frozen=True):
    name: str
    role: Role
    nodes: tuple[str, ...] = ()  # agents: the nodes they act for
    expires_ns: int | None = None  # refused from then on (None: never)

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def may_act_for(self, owner: str) -> bool:
        """True if this caller may change a group owned by ``owner`` (submit, scale,
        cancel): its owner or an admin; agents and claim drivers never."""
        return self.is_admin or (self.role == "owner" and self.name == owner)


class _TokenDoc(msgspec.Struct, forbid_unknown_fields=True):
    user: str
    role: Literal["admin", "owner", "user", "agent", "claims"] = "owner"
    nodes: list[str] = msgspec.field(default_factory=list)
    expires: str | None = None


class _TokensDoc(msgspec.Struct, forbid_unknown_fields=True):
    tokens: dict[str, _TokenDoc] = msgspec.field(default_factory=dict)


class TokenError(ValueError):
    """The tokens file is unreadable or invalid (names the problem)."""


def token_hash(token: str) -> str:
    """The tokens-file key that stands for ``token`` without revealing it."""
    return HASH_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    """A fresh random token (32 bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def _user(path: Path, entry: _TokenDoc) -> User:
    where = f"tokens file {path}: token of {entry.user!r}"
    role: Role = "owner" if entry.role == "user" else entry.role
    if role == "agent" and not entry.nodes:
        raise TokenError(f"{where}: an agent token needs a non-empty 'nodes' list")
    if role != "agent" and entry.nodes:
        raise TokenError(f"{where}: 'nodes' is only for agent tokens (role is {role!r})")
    if len(set(entry.nodes)) != len(entry.nodes):
        raise TokenError(f"{where}: 'nodes' lists a node twice")
    expires = None if entry.expires is None else _expiry_ns(where, entry.expires)
    return User(name=entry.user, role=role, nodes=tuple(sorted(entry.nodes)), expires_ns=expires)


def _expiry_ns(where: str, text: str) -> int:
    """``expires`` as ns since the epoch: ISO-8601 with a zone (``Z`` or ``+02:00``)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise TokenError(
            f"{where}: 'expires' must be an ISO-8601 time with a zone, "
            f"e.g. 2027-01-31T00:00:00Z (got {text!r})"
        )
    return int(when.timestamp()) * 1_000_000_000 + when.microsecond * 1000


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC).isoformat().replace("+00:00", "Z")


def _exposure_warning(path: Path, raw: int) -> str | None:
    """A warning when a file holding ``raw`` raw tokens can be read by others."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None
    if raw == 0 or not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    who = " and ".join(
        w for w, bit in (("its group", stat.S_IRGRP), ("others", stat.S_IROTH)) if mode & bit
    )
    return (
        f"tokens file {path} (mode {mode:04o}) is readable by {who} and holds {raw} raw "
        f"token(s): chmod 600 it, or key them by their SHA-256 (as `costart token new` does)"
    )


class Tokens:
    """Token -> `User`. Raw tokens and hashes are both compared in constant time, each
    against every entry, so the time taken does not tell which one matched."""

    def __init__(
        self,
        raw: dict[str, User],
        hashed: dict[str, User] | None = None,
        *,
        warnings: tuple[str, ...] = (),
        path: Path | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._entries = (
            sorted((token.encode(), user) for token, user in raw.items()),
            sorted((digest.encode(), user) for digest, user in (hashed or {}).items()),
        )
        self.warnings = warnings  # said once by whoever loads the file (serve logs them)
        self.path = path
        self._clock = clock

    def reload(self) -> Tokens:
        """Read the file again and take its tokens (one assignment: a request sees the
        old set or the new one whole). Raises `TokenError`, keeping the old set, if the
        file no longer reads. Returns the file as read (for its warnings)."""
        if self.path is None:
            raise TokenError("these tokens were not read from a file")
        fresh = Tokens.from_toml(self.path)
        self._entries = fresh._entries
        self.warnings = fresh.warnings
        return fresh

    @classmethod
    def from_toml(cls, path: Path) -> Tokens:
        doc = read_toml(path, _TokensDoc, "tokens file", TokenError)
        raw: dict[str, User] = {}
        hashed: dict[str, User] = {}
        for key, entry in doc.tokens.items():
            user = _user(path, entry)
            if key.startswith(HASH_PREFIX):
                digest = key[len(HASH_PREFIX) :]
                if len(digest) != _SHA256_HEX_CHARS or digest.strip("0123456789abcdef"):
                    raise TokenError(
                        f"tokens file {path}: token of {entry.user!r}: a hashed key is "
                        f"'sha256:' and 64 lowercase hex digits"
                    )
                hashed[key] = user
            elif len(key) < MIN_TOKEN_CHARS:
                raise TokenError(
                    f"tokens file {path}: token of {entry.user!r} is shorter than "
                    f"{MIN_TOKEN_CHARS} characters"
                )
            else:
                raw[key] = user
        warning = _exposure_warning(path, len(raw))
        return cls(raw, hashed, warnings=(warning,) if warning else (), path=path)

    def _known(self, presented: str) -> User | None:
        """The entry ``presented`` matches, expired or not."""
        found = None
        token = presented.encode()
        raw, hashed = self._entries  # one read: a reload swaps both at once
        for candidate, user in raw:
            if hmac.compare_digest(candidate, token):
                found = user
        if hashed:
            digest = token_hash(presented).encode()
            for candidate, user in hashed:
                if hmac.compare_digest(candidate, digest):
                    found = user
        return found

    def user_for_token(self, presented: str) -> User | None:
        """The caller a token names; None if unknown or expired."""
        found = self._known(presented)
        expires = None if found is None else found.expires_ns
        return None if expires is not None and self._clock() >= expires else found

    def user_for_header(self, authorization: str | None) -> User | None:
        """The user an ``Authorization: Bearer TOKEN`` header names, or None."""
        if not authorization or not authorization.lower().startswith(BEARER):
            return None
        return self.user_for_token(authorization[len(BEARER) :].strip())

    def refusal(self, authorization: str | None) -> str:
        """Why `user_for_header` gave None, for the 401: no token, an unknown one, or
        when the token expired (said only for a token that matched)."""
        if authorization and authorization.lower().startswith(BEARER):
            known = self._known(authorization[len(BEARER) :].strip())
            if known is not None and known.expires_ns is not None:
                return f"the bearer token expired at {_iso(known.expires_ns)}"
        return "missing or unknown bearer token"
