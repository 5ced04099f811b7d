"""Bearer tokens: a TOML file maps each token (or its SHA-256) to a user and a role.

```toml
[tokens.3f1c...]              # the token itself is the key
user = "alice"
role = "owner"                # owner | admin | agent | claims ("user" is the old name of owner)

[tokens."sha256:9b74c9..."]   # or the token's SHA-256 (hex): a copy of the file lets no one in
user = "agent-rack-7"
role = "agent"
nodes = ["h100-0-0", "h100-0-1"]   # an agent acts for these nodes only
```

Tokens are random and long (at least 16 characters, `costart token new` makes 32 bytes),
so one SHA-256 is enough to make the file useless to a reader (ADR 0036): there is no
password to guess. Who may do what is `costart.rest.authz`. No or an unknown token is 401.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
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
    return User(name=entry.user, role=role, nodes=tuple(sorted(entry.nodes)))


class Tokens:
    """Token -> `User`. Raw tokens and hashes are both compared in constant time, each
    against every entry, so the time taken does not tell which one matched."""

    def __init__(self, raw: dict[str, User], hashed: dict[str, User] | None = None) -> None:
        self._raw = sorted((token.encode(), user) for token, user in raw.items())
        self._hashed = sorted((digest.encode(), user) for digest, user in (hashed or {}).items())

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
        return cls(raw, hashed)

    def user_for_token(self, presented: str) -> User | None:
        found = None
        token = presented.encode()
        for candidate, user in self._raw:
            if hmac.compare_digest(candidate, token):
                found = user
        if self._hashed:
            digest = token_hash(presented).encode()
            for candidate, user in self._hashed:
                if hmac.compare_digest(candidate, digest):
                    found = user
        return found

    def user_for_header(self, authorization: str | None) -> User | None:
        """The user an ``Authorization: Bearer TOKEN`` header names, or None."""
        if not authorization or not authorization.lower().startswith(BEARER):
            return None
        return self.user_for_token(authorization[len(BEARER) :].strip())
