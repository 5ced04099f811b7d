"""Where the CLI's answers come from: the store directly, or `costart serve` over REST.

Both speak the view rows of `costart.projections`, so the rendering does not care.
`LocalBackend` opens the controller's log the `costart.bootstrap.Settings` name
(``--store DIR`` or ``--store postgresql://...``, ADR 0010): reads catch the views up from
their tracked position and never fold the whole log; commands get their `Controller` from
`costart.bootstrap` — with the placement step over the cluster file, so a group that can
never fit is refused here exactly as `serve` refuses it — and then catch the views up.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from costart.app import Controller
from costart.bootstrap import Settings, bootstrap
from costart.cli.exits import AccessDenied, Unavailable
from costart.cli.leadership import refuse_if_led
from costart.domain.errors import Conflict, DomainError, NotFound, SpecError
from costart.domain.spec import SpecFormat
from costart.projections import (
    GroupDetail,
    GroupView,
    HoldView,
    MemberView,
    RecorderSource,
    TimelineEntry,
    Views,
)
from costart.rest.client import ApiError, Client, WatchClosed, WatchEvent
from costart.rest.models import Why

T = TypeVar("T")
HTTP_TIMEOUT_S: Final = 30.0


class Backend(Protocol):
    def submit(self, data: bytes, fmt: SpecFormat) -> GroupView: ...
    def groups(self, owner: str | None, state: str | None) -> list[GroupView]: ...
    def members(self, group: str | None) -> list[MemberView]: ...
    def describe(self, group: str) -> GroupDetail: ...
    def events(self, group: str) -> list[TimelineEntry]: ...
    def why(self, group: str) -> Why: ...
    def cancel(self, group: str) -> GroupView: ...
    def scale(self, group: str, member: str, replicas: int) -> MemberView: ...
    def holds(self) -> list[HoldView]: ...
    def close(self) -> None: ...


class LocalBackend:
    """The store the settings name, opened directly; its views in their directory."""

    def __init__(self, settings: Settings) -> None:
        views_dir = settings.views_dir()
        if views_dir is None:
            raise ValueError("the direct CLI needs a store (--store DIR|postgresql://...)")
        self.settings = settings
        self.env = settings.controller_env()
        self.views = Views(views_dir)

    def close(self) -> None:
        self.views.close()

    def _fresh(self) -> Views:
        source = RecorderSource.from_env(self.env)
        if self.views.position() > source.max_position():
            self.views.rebuild(source)  # the log was replaced under the views
        else:
            self.views.catch_up(source)
        return self.views

    def _controller(self) -> Controller:
        refuse_if_led(self.env)
        return bootstrap(self.settings)

    def submit(self, data: bytes, fmt: SpecFormat) -> GroupView:
        controller = self._controller()
        group = controller.submit_document(data, fmt)
        self.views.catch_up(controller)
        return self.views.group(group.name)

    def cancel(self, group: str) -> GroupView:
        controller = self._controller()
        controller.cancel(group)
        self.views.catch_up(controller)
        return self.views.group(group)

    def scale(self, group: str, member: str, replicas: int) -> MemberView:
        controller = self._controller()
        controller.scale(f"{group}/{member}", replicas)
        self.views.catch_up(controller)
        return next(m for m in self.views.members(group) if m.name == member)

    def groups(self, owner: str | None, state: str | None) -> list[GroupView]:
        return self._fresh().groups(owner=owner, state=state)

    def members(self, group: str | None) -> list[MemberView]:
        return self._fresh().members(group)

    def describe(self, group: str) -> GroupDetail:
        return self._fresh().describe(group)

    def events(self, group: str) -> list[TimelineEntry]:
        return self._fresh().timeline(group)

    def why(self, group: str) -> Why:
        views = self._fresh()
        row = views.group(group)
        history = tuple(views.pend_history(group))
        return Why(group=row.name, state=row.state, pend_reason=row.pend_reason, history=history)

    def holds(self) -> list[HoldView]:
        return self._fresh().holds()


class RemoteBackend:
    """The REST API of `costart serve` (``--server URL --token T``, ``--ca-file``)."""

    def __init__(self, url: str, token: str | None, ca_file: Path | None = None) -> None:
        try:
            self.client = Client(url, token, ca_file=ca_file, timeout_s=HTTP_TIMEOUT_S)
        except ApiError as error:
            raise error_for(error) from None

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, path: str, type_: type[T], **kwargs: Any) -> T:
        try:
            return self.client.call(method, path, type_, **kwargs)
        except ApiError as error:
            raise error_for(error) from None

    def submit(self, data: bytes, fmt: SpecFormat) -> GroupView:
        headers = {"Content-Type": f"application/{fmt}"}
        return self._call("POST", "/v1/groups", GroupView, content=data, headers=headers)

    def groups(self, owner: str | None, state: str | None) -> list[GroupView]:
        params = {k: v for k, v in (("owner", owner), ("state", state)) if v is not None}
        if "state" in params:
            params["state"] = params["state"].upper()
        return self._call("GET", "/v1/groups", list[GroupView], params=params)

    def members(self, group: str | None) -> list[MemberView]:
        path = "/v1/members" if group is None else f"/v1/groups/{quote(group)}/members"
        return self._call("GET", path, list[MemberView])

    def describe(self, group: str) -> GroupDetail:
        return self._call("GET", f"/v1/groups/{quote(group)}", GroupDetail)

    def events(self, group: str) -> list[TimelineEntry]:
        return self._call("GET", f"/v1/groups/{quote(group)}/events", list[TimelineEntry])

    def why(self, group: str) -> Why:
        return self._call("GET", f"/v1/groups/{quote(group)}/why", Why)

    def cancel(self, group: str) -> GroupView:
        return self._call("DELETE", f"/v1/groups/{quote(group)}", GroupView)

    def scale(self, group: str, member: str, replicas: int) -> MemberView:
        path = f"/v1/groups/{quote(group)}/members/{quote(member)}/scale"
        return self._call("POST", path, MemberView, json={"replicas": replicas})

    def holds(self) -> list[HoldView]:
        return self._call("GET", "/v1/holds", list[HoldView])

    def watch(self, after: int | None, group: str | None) -> Iterator[WatchEvent]:
        try:
            yield from self.client.watch(after=after, group=group)
        except (ApiError, WatchClosed) as error:
            raise (
                error_for(error) if isinstance(error, ApiError) else Unavailable(str(error))
            ) from None


def quote(segment: str) -> str:
    """A name as one URL path segment (anything put into a URL is quoted)."""
    return urllib.parse.quote(segment, safe="")


def error_for(error: ApiError) -> Exception:
    """The exception (hence exit code) a REST error answer stands for."""
    message, field, status = error.message, error.field, error.status
    if status in (401, 403):
        return AccessDenied(message)
    if status == 404:
        return NotFound(message)
    if status == 409:
        return Conflict(message)
    if status == 422 and field is not None:
        return SpecError(field, message.removeprefix(f"{field}: "))
    if status in (413, 422):
        return SpecError("", message)
    if status == 400:
        return DomainError(message)
    if status == 0:
        return Unavailable(message)
    return Unavailable(f"server answered {status}: {message}")
