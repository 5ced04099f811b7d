"""The live demo's narration: one readable line per watched event, and what the run has
seen so far (which tasks run, whether the group ended).

Times are the controller's (ISO-8601 UTC) with the offset from the group's submission;
no raw nanoseconds. The lines say what happened in the words of docs/design.md §3.2 (PENDING,
PLACED, claims READY, RUNNING, SUCCEEDED).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from costart import display
from costart.rest.client import WatchEvent

TERMINAL: Final = {
    "GroupSucceeded": "SUCCEEDED",
    "GroupFailed": "FAILED",
    "GroupCancelled": "CANCELLED",
}


def _actor(event: dict[str, Any]) -> str:
    actor = event.get("actor")
    if not actor:
        return ""
    kind, name = [*actor, ""][:2]
    return f"  [{kind}:{name}]" if name else f"  [{kind}]"


def _assignments(event: dict[str, Any]) -> str:
    return ", ".join(f"task {a[0]} on {a[1]}" for a in event.get("assignments", []))


@dataclass
class Story:
    """What the demo has watched so far."""

    origin_ns: int | None = None
    running: dict[tuple[str, int], int] = field(default_factory=dict)  # (member, task) -> attempt
    ended: str | None = None  # the group's terminal state
    barrier_released: int = 0
    failures: list[tuple[str, int | None, str]] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)

    def line(self, watched: WatchEvent) -> str | None:
        """The event as a line (None: nothing a reader needs, e.g. a pend reason)."""
        event = watched.event
        at_ns = int(event.get("at_ns", 0))
        if self.origin_ns is None:
            self.origin_ns = at_ns
        what = self._what(watched.type, watched.member, event)
        if what is None:
            return None
        when = f"{display.clock(at_ns):<24} {display.offset(at_ns, self.origin_ns):>7}"
        return f"{when}  {what}{_actor(event)}"

    def _what(self, kind: str, member: str | None, event: dict[str, Any]) -> str | None:
        task = event.get("task", event.get("index"))
        match kind:
            case "GroupSubmitted":
                return f"group {event['spec']['name']} submitted: PENDING"
            case "GroupPlaced":
                return (
                    f"every member placed (attempt {event['attempt']}): PLACED, waiting for claims"
                )
            case "MemberPlaced":
                return f"  {member}: placed {_assignments(event)}"
            case "ClaimReady":
                who = member if task is None else f"{member} task {task}"
                return f"  {who}: claim {event['claim']} READY"
            case "ClaimFailed":
                return f"  {member}: claim {event['claim']} FAILED ({event['reason']})"
            case "BarrierReleased":
                self.barrier_released += 1
                return "every claim READY: barrier released, the group is RUNNING"
            case "MemberStarted" | "TaskStarted":
                self.running[(str(member), int(task or 0))] = int(event.get("attempt") or 1)
                return f"  {member} task {task} started (attempt {event.get('attempt')})"
            case "TaskSucceeded":
                self.running.pop((str(member), int(task or 0)), None)
                return f"  {member} task {task} exited 0"
            case "MemberFailed":
                self.failures.append((str(member), task, str(event["reason"])))
                if task is not None:
                    self.running.pop((str(member), int(task)), None)
                code = event.get("exit_code")
                exit_text = "" if code is None else f", exit {code}"
                which = member if task is None else f"{member} task {task}"
                return f"  {which} FAILED ({event['reason']}{exit_text}): {event['action']}"
            case "MemberRestarted":
                if not event.get("counted"):
                    return f"  {member} relaunching (not charged to its restart budget)"
                return f"  {member} relaunching (restart {event['restarts']} of its budget)"
            case "MemberSucceeded":
                return f"  {member} SUCCEEDED"
            case "MemberStopped":
                self.stopped.append(str(member))
                return f"  {member} STOPPED ({event['reason']})"
            case "PlacementReleased":
                return f"placement released ({event['reason']}): PENDING, retry later"
            case "BarrierTimedOut":
                return "barrier timed out: some claim never became READY"
            case _ if kind in TERMINAL:
                self.ended = TERMINAL[kind]
                why = f" ({event['reason']})" if event.get("reason") else ""
                return f"group {TERMINAL[kind]}{why}"
            case "PendReasonChanged" | "MemberCreated":
                return None  # the submission says it; a pend reason is the states' business
            case _:
                return f"  {kind}" + (f" {member}" if member else "")
