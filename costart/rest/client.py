"""A client of `costart serve`, for the CLI, node agents and claim drivers.

- bearer token; TLS verified against the system's CAs, or a CA file (``ca_file``) for a
  cluster's own CA;
- several server URLs (a leader and its standbys): a call that cannot connect, or that
  a standby answers with 503 "not leader", is retried on the leader the answer names, or
  the next URL, until ``failover_s`` has passed;
- `watch` parses the Server-Sent Events stream and resumes with ``Last-Event-ID`` after a
  lost connection or a failover, so no event is skipped or repeated;
- `task_log` reads a task's output relayed from its node's agent, and `follow_log` reads
  on as it grows and across the task's restarts (ADR 0084).

Errors come back as `ApiError` (status, message, field); reports are idempotent on the
server, so a retried report is safe.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from costart.rest.log_wire import LogChunk

T = TypeVar("T")
TIMEOUT_S: Final = 30.0
RETRY_PAUSE_S: Final = 0.2
FOLLOW_WAIT_S: Final = 20.0  # a follower's long poll for new output
NEXT_ATTEMPT_PAUSE_S: Final = 1.0  # a follower of an ended attempt asks again after


class ApiError(Exception):
    """An error answer (or no answer) from the server."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        self.status = status
        self.message = message
        self.field = field
        super().__init__(f"{status}: {message}" if status else message)


class _ErrorBody(msgspec.Struct):
    error: str
    field: str | None = None
    leader: str | None = None


class WatchEvent(msgspec.Struct, frozen=True):
    """One event of the watch stream (its ``data``), or a close frame's reason."""

    position: int
    type: str
    group: str | None = None
    member: str | None = None
    at: str = ""
    event: dict[str, Any] = msgspec.field(default_factory=dict)


class WatchClosed(Exception):
    """The server closed the stream on purpose (e.g. this client was too slow)."""

    def __init__(self, reason: str, resume_after: int) -> None:
        self.reason = reason
        self.resume_after = resume_after
        super().__init__(f"watch closed by the server: {reason} (resume after {resume_after})")


def tls_context(ca_file: Path | None) -> ssl.SSLContext | bool:
    """What httpx verifies a server with: the system's CAs, or only ``ca_file``'s."""
    if ca_file is None:
        return True
    if not ca_file.is_file():
        raise ApiError(0, f"CA file {ca_file}: no such file")
    return ssl.create_default_context(cafile=str(ca_file))


class Client:
    def __init__(
        self,
        urls: str | Sequence[str],
        token: str | None,
        *,
        ca_file: Path | None = None,
        timeout_s: float = TIMEOUT_S,
        failover_s: float = 0.0,
    ) -> None:
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        if not self.urls:
            raise ApiError(0, "no server URL")
        self.current = self.urls[0]
        self.failover_s = failover_s
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(headers=headers, timeout=timeout_s, verify=tls_context(ca_file))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- calls ---------------------------------------------------------------------------

    def call(self, method: str, path: str, type_: type[T], **kwargs: Any) -> T:
        """One call, following the leader; the decoded answer or `ApiError`."""
        response = self._send(method, path, **kwargs)
        return msgspec.json.decode(response.content, type=type_)

    def call_list(
        self, path: str, item_type: type[T], params: Sequence[tuple[str, str]] = ()
    ) -> list[T]:
        """Every row of a paged list operation: follows each page's ``Link: rel="next"``
        (the server's own URL, its continue token already quoted) to the last page."""
        rows: list[T] = []
        page_type: Any = list[item_type]  # type: ignore[valid-type]
        response = self._send("GET", path, params=list(params))
        while True:
            rows.extend(msgspec.json.decode(response.content, type=page_type))
            following = response.links.get("next", {}).get("url")
            if following is None:
                return rows
            if not following.startswith("/"):
                raise ApiError(0, f"bad next-page link from {self.current}: {following!r}")
            response = self._send("GET", following)

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        deadline = time.monotonic() + self.failover_s
        while True:
            try:
                response = self._http.request(method, self.current + path, **kwargs)
            except httpx.HTTPError as error:
                failure = ApiError(0, f"cannot reach {self.current}: {error}")
                leader = None
            else:
                if response.is_success:
                    return response
                failure = _error(response)
                leader = _leader(response)
                if response.status_code != 503:
                    raise failure
            if time.monotonic() >= deadline:
                raise failure
            self._next_server(leader)
            time.sleep(RETRY_PAUSE_S)

    def _next_server(self, leader: str | None) -> None:
        if leader and leader != self.current:
            self.current = leader
            return
        index = self.urls.index(self.current) if self.current in self.urls else -1
        self.current = self.urls[(index + 1) % len(self.urls)]

    # --- task output -------------------------------------------------------------------

    def task_log(
        self,
        group: str,
        member: str,
        task: int,
        *,
        attempt: int | None = None,
        offset: int | None = None,
        tail: int | None = None,
        wait_s: float = 0.0,
    ) -> LogChunk:
        """One chunk of a task's output (``GET .../tasks/{task}/log``): of ``attempt``
        (default the current one), from ``offset`` or its last ``tail`` lines; a running
        attempt with nothing new is waited on up to ``wait_s``."""
        params: dict[str, str] = {"wait": str(wait_s)}
        for name, value in (("attempt", attempt), ("offset", offset), ("tail", tail)):
            if value is not None:
                params[name] = str(value)
        path = f"/v1/groups/{_q(group)}/members/{_q(member)}/tasks/{task}/log"
        return self.call("GET", path, LogChunk, params=params)

    def follow_log(
        self,
        group: str,
        member: str,
        task: int,
        *,
        attempt: int | None = None,
        tail: int | None = None,
        follow: bool = False,
    ) -> Iterator[LogChunk]:
        """A task's output chunk by chunk: one attempt (default the current one) from its
        start or its last ``tail`` lines, up to what it holds now. With ``follow``, on as
        it grows, then each newer attempt from its start (a restart), until the group
        ends; a pinned ``attempt`` is followed to its own end only."""
        chunk = self.task_log(group, member, task, attempt=attempt, tail=tail)
        while True:
            yield chunk
            if chunk.final or (chunk.complete and attempt is not None):
                return
            caught_up = chunk.next_offset >= chunk.size
            if not follow and (chunk.complete or caught_up):
                return
            if chunk.complete and chunk.latest_attempt > chunk.attempt:
                chunk = self.task_log(group, member, task, attempt=chunk.latest_attempt)
                continue
            if chunk.complete:  # a relaunch may come (or the group end): ask again soon
                time.sleep(NEXT_ATTEMPT_PAUSE_S)
            wait = FOLLOW_WAIT_S if caught_up else 0.0
            chunk = self.task_log(
                group,
                member,
                task,
                attempt=chunk.attempt,
                offset=chunk.next_offset,
                wait_s=wait,
            )

    # --- the watch stream ----------------------------------------------------------------

    def watch(
        self,
        after: int | None = None,
        group: str | None = None,
        nodes: Sequence[str] = (),
    ) -> Iterator[WatchEvent]:
        """Events after log position ``after`` (the present if None), forever; resumes
        after a lost connection or a failover (within ``failover_s`` each time)."""
        last = after
        deadline = time.monotonic() + self.failover_s
        while True:
            params: dict[str, Any] = {}
            if group is not None:
                params["group"] = group
            if nodes:
                params["node"] = list(nodes)
            headers = {"Last-Event-ID": str(last)} if last is not None else {}
            try:
                with self._http.stream(
                    "GET",
                    self.current + "/v1/watch",
                    params=params,
                    headers=headers,
                    timeout=httpx.Timeout(TIMEOUT_S, read=None),
                ) as response:
                    if not response.is_success:
                        response.read()
                        failure = _error(response)
                        if response.status_code != 503:
                            raise failure
                        self._retry_or_raise(deadline, failure, _leader(response))
                        continue
                    for event in _parse_sse(response.iter_lines()):
                        last = event.position
                        deadline = time.monotonic() + self.failover_s
                        yield event
            except httpx.HTTPError as error:
                failure = ApiError(0, f"watch of {self.current} lost: {error}")
                self._retry_or_raise(deadline, failure, None)

    def _retry_or_raise(self, deadline: float, failure: ApiError, leader: str | None) -> None:
        if time.monotonic() >= deadline:
            raise failure
        self._next_server(leader)
        time.sleep(RETRY_PAUSE_S)


def _q(text: str) -> str:
    return quote(text, safe="")


def _parse_sse(lines: Iterator[str]) -> Iterator[WatchEvent]:
    kind = "message"
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                body = "\n".join(data)
                if kind == "close":
                    closed = msgspec.json.decode(body)
                    raise WatchClosed(str(closed["reason"]), int(closed["resume_after"]))
                yield msgspec.json.decode(body, type=WatchEvent)
            kind, data = "message", []
        elif line.startswith(":"):
            continue  # a comment: keepalive
        elif line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())


def _error(response: httpx.Response) -> ApiError:
    try:
        body = msgspec.json.decode(response.content, type=_ErrorBody)
    except msgspec.DecodeError:
        return ApiError(response.status_code, response.text[:200] or response.reason_phrase)
    return ApiError(response.status_code, body.error, body.field)


def _leader(response: httpx.Response) -> str | None:
    try:
        return msgspec.json.decode(response.content, type=_ErrorBody).leader
    except msgspec.DecodeError:
        return None
