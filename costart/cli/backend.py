"""Where the CLI's answers come from: the store directly, or `costart serve` over REST.

Both speak the view rows of `costart.projections`, so the rendering does not care.
`LocalBackend` opens the controller's log the `costart.bootstrap.Settings` name
(``--store DIR`` or ``--store postgresql://...``, ADR 0010): reads catch the views up from
their tracked position and never fold the whole log; commands get their `Controller` from
`costart.bootstrap` — with the placement step over the cluster file, so a group that can
never fit is refused here exactly as `serve` refuses it — and then catch the views up.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar
from urllib.parse import quote

import msgspec
import typer

from costart.cli.estimated_rows import EstimatedDetail, EstimatedGroup
from costart.cli.exits import AccessDenied, Unavailable, UsageError
from costart.files import why_not_writable
from costart.projections.models import GroupDetail, GroupView, HoldView, MemberView, TimelineEntry
from costart.service.queries import Why

if TYPE_CHECKING:
    from costart.bootstrap import Settings
    from costart.cli.read_client import ReadClient
    from costart.controller import Controller
    from costart.domain.actors import Actor
    from costart.domain.labels import Selector
    from costart.domain.spec import SpecFormat
    from costart.rest.client import Client, WatchEvent

T = TypeVar("T")
HTTP_TIMEOUT_S: Final = 30.0


class Backend(Protocol):
    def submit(self, data: bytes, fmt: SpecFormat) -> GroupView: ...
    def groups(
        self, owner: str | None, state: str | None, selector: Selector = ()
    ) -> list[GroupView]: ...
    def members(self, group: str | None) -> list[MemberView]: ...
    def describe(self, group: str) -> GroupDetail: ...
    def events(self, group: str) -> list[TimelineEntry]: ...
    def why(self, group: str) -> Why: ...
    def cancel(self, group: str) -> GroupView: ...
    def scale(self, group: str, member: str, replicas: int) -> MemberView: ...
    def holds(self) -> list[HoldView]: ...
    def close(self) -> None: ...


def _warn(message: str) -> None:
    typer.echo(f"warning: {message}", err=True)


def local_user() -> Actor:
    """Who runs the CLI on the store directly: the operating-system user."""
    from costart.domain.actors import Actor  # noqa: PLC0415

    return Actor.user(getpass.getuser())


class LocalBackend:
    """The store the settings name, opened directly; its views in their directory.

    Views are anchored to the log and checked (`CheckedViews`): a log that lost its tail
    is refused before anything reads or writes it; ``rebuild_views`` rebuilds them."""

    def __init__(self, settings: Settings, *, rebuild_views: bool = False) -> None:
        # What a store needs loads with the store (ADR 0078).
        from costart.projections import RecorderSource  # noqa: PLC0415
        from costart.server.checked_views import CheckedViews  # noqa: PLC0415

        views_dir = settings.views_dir()
        if views_dir is None:
            raise ValueError("the direct CLI needs a store (--store DIR|postgresql://...)")
        self.settings = settings
        self.env = settings.controller_env()
        store_dir = settings.store_dir
        self.read_only = None if store_dir is None else why_not_writable(store_dir)
        self._stack = ExitStack()
        self._told = False
        if self.read_only is not None:
            # Nothing may be written there, not even the views' lock: the log is opened
            # read-only and the answers come from views folded in a scratch directory.
            assert store_dir is not None
            from costart.eventlog.backends import open_replay_log  # noqa: PLC0415

            log = self._stack.enter_context(open_replay_log(str(store_dir), os.environ))
            scratch = Path(self._stack.enter_context(tempfile.TemporaryDirectory()))
            said = f"the store at {store_dir} is read-only ({self.read_only})"

            def source() -> RecorderSource:
                if not self._told:  # once, and only when a read needs the log
                    _warn(f"{said}: answering from views folded from its log")
                    self._told = True
                return log.source

            self.checked = CheckedViews(scratch / "views", source, rebuild=False, warn=_warn)
            return
        self.checked = CheckedViews(
            views_dir, lambda: RecorderSource.from_env(self.env), rebuild=rebuild_views, warn=_warn
        )

    def close(self) -> None:
        self.checked.close()
        self._stack.close()

    def _controller(self) -> Controller:
        from costart.bootstrap import bootstrap  # noqa: PLC0415
        from costart.server.leadership import refuse_if_led  # noqa: PLC0415

        if self.read_only is not None:
            raise UsageError(
                f"the store at {self.settings.store_dir} is read-only ({self.read_only}): "
                "only read commands work on it"
            )
        refuse_if_led(self.env)
        # The views' anchor first: never append to a log that lost its tail.
        self.checked.fresh()
        return bootstrap(self.settings, check_views=False)  # checked just now, held open

    def submit(self, data: bytes, fmt: SpecFormat) -> GroupView:
        controller = self._controller()
        group = controller.submit_document(data, fmt, actor=local_user())
        return self.checked.answer(lambda views: views.group(group.name))

    def cancel(self, group: str) -> GroupView:
        controller = self._controller()
        controller.cancel(group, actor=local_user())
        return self.checked.answer(lambda views: views.group(group))

    def scale(self, group: str, member: str, replicas: int) -> MemberView:
        controller = self._controller()
        controller.scale(f"{group}/{member}", replicas, actor=local_user())
        return self.checked.answer(
            lambda views: next(m for m in views.members(group) if m.name == member)
        )

    def groups(
        self, owner: str | None, state: str | None, selector: Selector = ()
    ) -> list[GroupView]:
        return self.checked.answer(
            lambda views: views.groups(owner=owner, state=state, selector=selector)
        )

    def members(self, group: str | None) -> list[MemberView]:
        return self.checked.answer(lambda views: views.members(group))

    def describe(self, group: str) -> GroupDetail:
        return self.checked.answer(lambda views: views.describe(group))

    def events(self, group: str) -> list[TimelineEntry]:
        return self.checked.answer(lambda views: views.timeline(group))

    def why(self, group: str) -> Why:
        from costart.service.queries import why_not_running  # noqa: PLC0415

        return self.checked.answer(lambda views: why_not_running(views, group))

    def holds(self) -> list[HoldView]:
        return self.checked.answer(lambda views: views.holds())


def _segment(value: str) -> str:
    """``value`` as one URL path segment: every reserved character quoted (a name such as
    ``x/../victim`` or ``g#x`` must reach the server as itself, to be refused there)."""
    # Dots too: httpx would resolve a segment "." or ".." against the path.
    return quote(value, safe="").replace(".", "%2E")


class RemoteBackend:
    """The REST API of `costart serve` (``--server URL --token T``, ``--ca-file``).

    Reads go through `ReadClient` (the standard library's HTTP); writes and the watch
    stream through `costart.rest.client.Client`, loaded on the first of them."""

    def __init__(self, url: str, token: str | None, ca_file: Path | None = None) -> None:
        from costart.cli.read_client import ReadClient, ReadError  # noqa: PLC0415

        self.url, self.token, self.ca_file = url, token, ca_file
        self.reader: ReadClient
        try:
            self.reader = ReadClient(url, token, ca_file=ca_file, timeout_s=HTTP_TIMEOUT_S)
        except ReadError as error:
            raise error_for(error) from None
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        """The full client, for writes and the watch stream (made on first use)."""
        if self._client is None:
            from costart.rest.client import ApiError, Client  # noqa: PLC0415

            try:
                self._client = Client(
                    self.url, self.token, ca_file=self.ca_file, timeout_s=HTTP_TIMEOUT_S
                )
            except ApiError as error:
                raise error_for(error) from None
        return self._client

    def close(self) -> None:
        self.reader.close()
        if self._client is not None:
            self._client.close()

    def _call(self, method: str, path: str, type_: type[T], **kwargs: Any) -> T:
        from costart.rest.client import ApiError  # noqa: PLC0415

        try:
            return self.client.call(method, path, type_, **kwargs)
        except ApiError as error:
            raise error_for(error) from None

    def _get(self, path: str, type_: type[T]) -> T:
        from costart.cli.read_client import ReadError  # noqa: PLC0415

        try:
            return self.reader.call(path, type_)
        except ReadError as error:
            raise error_for(error) from None

    def _list(
        self, path: str, item_type: type[T], params: Sequence[tuple[str, str]] = ()
    ) -> list[T]:
        from costart.cli.read_client import ReadError  # noqa: PLC0415

        try:
            return self.reader.call_list(path, item_type, params)
        except ReadError as error:
            raise error_for(error) from None

    def submit(self, data: bytes, fmt: SpecFormat) -> GroupView:
        headers = {"Content-Type": f"application/{fmt}"}
        return self._call("POST", "/v1/groups", GroupView, content=data, headers=headers)

    def groups(
        self, owner: str | None, state: str | None, selector: Selector = ()
    ) -> list[GroupView]:
        """The rows with each waiting group's expected start (`EstimatedGroup`)."""
        params: list[tuple[str, str]] = [("owner", owner)] if owner is not None else []
        if state is not None:
            params.append(("state", state.upper()))
        params.extend(("label", f"{key}={value}") for key, value in selector)
        return list(self._list("/v1/groups", EstimatedGroup, params))

    def members(self, group: str | None) -> list[MemberView]:
        path = "/v1/members" if group is None else f"/v1/groups/{_segment(group)}/members"
        return self._list(path, MemberView)

    def describe(self, group: str) -> GroupDetail:
        return self._get(f"/v1/groups/{_segment(group)}", EstimatedDetail)

    def events(self, group: str) -> list[TimelineEntry]:
        return self._list(f"/v1/groups/{_segment(group)}/events", TimelineEntry)

    def why(self, group: str) -> Why:
        return self._get(f"/v1/groups/{_segment(group)}/why", Why)

    def cancel(self, group: str) -> GroupView:
        return self._call("POST", f"/v1/groups/{_segment(group)}/cancel", GroupView)

    def scale(self, group: str, member: str, replicas: int) -> MemberView:
        path = f"/v1/groups/{_segment(group)}/members/{_segment(member)}/scale"
        return self._call("POST", path, MemberView, json={"replicas": replicas})

    def holds(self) -> list[HoldView]:
        return self._list("/v1/holds", HoldView)

    def position(self) -> int:
        """The log position the server's views have reached: a list read after this
        holds every event up to it (reads are read-your-writes), so a watch that resumes
        after it misses nothing the list did not show (kubectl's resourceVersion)."""
        return self._get("/healthz", _Health).position

    def watch(self, after: int | None, group: str | None) -> Iterator[WatchEvent]:
        from costart.rest.client import ApiError, WatchClosed  # noqa: PLC0415

        try:
            yield from self.client.watch(after=after, group=group)
        except (ApiError, WatchClosed) as error:
            raise (
                error_for(error) if isinstance(error, ApiError) else Unavailable(str(error))
            ) from None


class _Health(msgspec.Struct):
    position: int


class _ErrorAnswer(Protocol):
    status: int
    message: str
    field: str | None


def error_for(error: _ErrorAnswer) -> Exception:
    """The exception (hence exit code) a REST error answer stands for (from either
    client: `ReadError` or `costart.rest.client.ApiError`)."""
    from costart.domain.errors import Conflict, DomainError, NotFound, SpecError  # noqa: PLC0415

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
