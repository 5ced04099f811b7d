"""Bearer tokens: a TOML file maps each token to a user and a role.

```toml
[tokens.3f1c...]          # the token itself is the key
user = "alice"
role = "user"             # "user" acts on the groups it owns; "admin" on every group
```

Who may do what (ADR 0007): every authenticated user may read; submitting needs the
spec's owner to be the caller (or an admin); cancelling needs the group's owner to be the
caller (or an admin). No or an unknown token is 401, a known user acting on another
user's group is 403.
"""

from __future__ import annotations

import hmac
import tomllib
from pathlib import Path
from typing import Literal

import msgspec

Role = Literal["admin", "user"]
BEARER = "bearer "


class User(msgspec.Struct, frozen=True):
    name: str
    role: Role

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def may_act_for(self, owner: str) -> bool:
        """True if this user may change a group owned by ``owner``."""
        return self.is_admin or self.name == owner


class _TokenDoc(msgspec.Struct, forbid_unknown_fields=True):
    user: str
    role: Role = "user"


class _TokensDoc(msgspec.Struct, forbid_unknown_fields=True):
    tokens: dict[str, _TokenDoc] = msgspec.field(default_factory=dict)


class TokenError(ValueError):
    """The tokens file is unreadable or invalid (names the problem)."""


class Tokens:
    """Token -> `User`, compared in constant time."""

    def __init__(self, users: dict[str, User]) -> None:
        self._users = dict(users)

    @classmethod
    def from_toml(cls, path: Path) -> Tokens:
        try:
            doc = msgspec.convert(tomllib.loads(path.read_text()), _TokensDoc)
        except (OSError, tomllib.TOMLDecodeError, msgspec.ValidationError) as error:
            raise TokenError(f"tokens file {path}: {error}") from error
        users = {}
        for token, entry in doc.tokens.items():
            if len(token) < 16:
                raise TokenError(f"tokens file {path}: a token is shorter than 16 characters")
            users[token] = User(name=entry.user, role=entry.role)
        return cls(users)

    def user_for_header(self, authorization: str | None) -> User | None:
        """The user an ``Authorization: Bearer TOKEN`` header names, or None."""
        if not authorization or not authorization.lower().startswith(BEARER):
            return None
        presented = authorization[len(BEARER) :].strip().encode()
        found = None
        # Compare against every token so the time taken does not tell which one matched.
        for token, user in sorted(self._users.items()):
            if hmac.compare_digest(token.encode(), presented):
                found = user
        return found
