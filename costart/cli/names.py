"""Object names as commands take them: what ``-o name`` prints is accepted back.

``get groups -o name`` prints ``group/NAME`` and ``get members -o name`` prints
``member/GROUP/MEMBER``; every command that takes a group accepts ``NAME``, ``group/NAME``
or ``groups/NAME``, and every command that takes a member ``GROUP/MEMBER`` or
``member/GROUP/MEMBER`` (kubectl's ``TYPE/NAME``). Resource types are accepted singular
or plural (`RESOURCE_TYPES`).
"""

from __future__ import annotations

from typing import Final

from costart.cli.exits import UsageError

RESOURCE_TYPES: Final = {
    "group": "group",
    "groups": "group",
    "member": "member",
    "members": "member",
    "hold": "hold",
    "holds": "hold",
    "event": "event",
    "events": "event",
}
"""Every spelling of a resource type -> its singular (what ``-o name`` prints)."""


def _typed(text: str, wanted: str) -> str:
    """``text`` without a leading ``TYPE/`` of the wanted type; `UsageError` when it
    names another type."""
    prefix, sep, rest = text.partition("/")
    kind = RESOURCE_TYPES.get(prefix)
    if not sep or kind is None:
        return text
    if kind != wanted:
        raise UsageError(f"{text!r} names a {kind}, not a {wanted}")
    return rest


def group_name(text: str) -> str:
    """A group as given: ``NAME``, ``group/NAME`` or ``groups/NAME``."""
    name = _typed(text, "group")
    if not name or "/" in name:
        raise UsageError(f"bad group {text!r}: write NAME or group/NAME")
    return name


def member_name(text: str) -> tuple[str, str]:
    """A member as given: ``GROUP/MEMBER`` or ``member/GROUP/MEMBER``."""
    group, sep, member = _typed(text, "member").partition("/")
    if not (sep and group and member) or "/" in member:
        raise UsageError(f"bad member {text!r}: write GROUP/MEMBER or member/GROUP/MEMBER")
    return group, member
