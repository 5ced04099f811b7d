"""The domain's errors. Every error names what was wrong, so a caller can act on it."""

from __future__ import annotations


class DomainError(Exception):
    """Base class of every error the domain raises on purpose."""


class SpecError(DomainError):
    """A group spec is invalid. ``path`` is the field path (``members[1].tasks``)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}" if path else reason)


class IllegalTransition(DomainError):
    """A command is not allowed in the current state; nothing was changed."""

    def __init__(self, what: str, state: str, command: str) -> None:
        self.what = what
        self.state = state
        self.command = command
        super().__init__(f"{what} is {state}: cannot {command}")


class NotFound(DomainError):
    """A named group or member does not exist (or is not live)."""


class Conflict(DomainError):
    """The command conflicts with existing state (e.g. a live group of that name exists)."""


class InvariantViolation(DomainError):
    """A docs/design.md §3.4 invariant does not hold. Names the rule, the group and the member."""

    def __init__(self, rule: str, group: str, member: str | None, detail: str) -> None:
        self.rule = rule
        self.group = group
        self.member = member
        self.detail = detail
        where = f"group {group}" + (f" member {member}" if member else "")
        super().__init__(f"invariant {rule} violated in {where}: {detail}")
