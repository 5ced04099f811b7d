"""Store settings, read from an eventsourcing ``Environment``.

Keys are looked up through ``Environment.get``, so each one may also be given
with the application's name as a prefix (e.g. ``BANKACCOUNTS_COSTART_LMDB_PATH``),
exactly like the library's own persistence modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeVar

from eventsourcing.utils import Environment, strtobool

PATH: Final = "COSTART_LMDB_PATH"
"""Directory of the LMDB environment (created if missing). Required."""
MAP_SIZE: Final = "COSTART_LMDB_MAP_SIZE"
"""Initial map size in bytes; the map grows by doubling when full."""
DURABILITY: Final = "COSTART_LMDB_DURABILITY"
"""``sync`` (default): a commit returns after its data is on disk.
``async``: commits are flushed at most ``ASYNC_SYNC_INTERVAL`` later, and on close."""
HEADROOM: Final = "COSTART_LMDB_HEADROOM"
"""Zero-filled bytes kept past the data's end (refilled at half) so that durable commits
do not grow the file (see ``costart.store.headroom``); ``0`` turns it off."""
POLL_INTERVAL: Final = "COSTART_LMDB_POLL_INTERVAL"
"""Seconds between a subscription's checks for events written by other processes."""
CREATE_TABLE: Final = "CREATE_TABLE"
"""The library's switch: when false, named databases must already exist."""

DEFAULT_MAP_SIZE: Final = 64 * 1024 * 1024
DEFAULT_HEADROOM: Final = 8 * 1024 * 1024
DEFAULT_POLL_INTERVAL: Final = 0.1
ASYNC_SYNC_INTERVAL: Final = 1.0

Durability = Literal["sync", "async"]


@dataclass(frozen=True)
class StoreSettings:
    """How to open one LMDB environment."""

    path: str
    map_size: int = DEFAULT_MAP_SIZE
    durability: Durability = "sync"
    poll_interval: float = DEFAULT_POLL_INTERVAL
    headroom: int = DEFAULT_HEADROOM
    readonly: bool = False
    """Open without the lock file and without writing: for a *copy* of a log."""


def _invalid(env: Environment, key: str, value: str, expected: str) -> OSError:
    return OSError(
        f"LMDB store environment value for key '{key}' is invalid "
        f"(keys tried: {', '.join(env.create_keys(key))}). "
        f"If set, {expected} is expected: {value!r}"
    )


N = TypeVar("N", int, float)


def _number(
    env: Environment, key: str, kind: type[N], default: N, expected: str, *, zero: bool = False
) -> N:
    """The value of ``key`` as ``kind`` (``default`` if unset): positive, or also 0 if
    ``zero``."""
    raw = env.get(key)
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise _invalid(env, key, raw, expected) from None
    if value < 0 or (value == 0 and not zero):
        raise _invalid(env, key, raw, expected)
    return value


def settings_from_env(env: Environment) -> StoreSettings:
    """Read ``StoreSettings`` from ``env``; raise ``OSError`` on missing/bad values."""
    path = env.get(PATH)
    if not path:
        keys = ", ".join(env.create_keys(PATH))
        msg = f"LMDB store path not found in environment with keys: {keys}"
        raise OSError(msg)

    map_size = _number(env, MAP_SIZE, int, DEFAULT_MAP_SIZE, "a positive int (bytes)")

    raw = (env.get(DURABILITY) or "sync").strip().lower()
    if raw not in ("sync", "async"):
        raise _invalid(env, DURABILITY, raw, "'sync' or 'async'")
    durability: Durability = "sync" if raw == "sync" else "async"

    poll_interval = _number(
        env, POLL_INTERVAL, float, DEFAULT_POLL_INTERVAL, "a positive float (seconds)"
    )
    headroom = _number(env, HEADROOM, int, DEFAULT_HEADROOM, "an int >= 0 (bytes)", zero=True)

    return StoreSettings(
        path=path,
        map_size=map_size,
        durability=durability,
        poll_interval=poll_interval,
        headroom=headroom,
    )


def create_from_env(env: Environment) -> bool:
    """The library's ``CREATE_TABLE`` switch (default yes)."""
    return bool(strtobool(env.get(CREATE_TABLE) or "yes"))
