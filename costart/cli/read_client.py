"""The reads of `costart serve` over the standard library's ``http.client``.

`get`, `describe`, `events` and `why` over ``--server`` only GET JSON: this client does
that without loading an HTTP library (ADR 0078), with the same contract as
`costart.rest.client.Client` (bearer token, TLS verified against the system's CAs or a CA
file, paged lists followed by their ``Link: rel="next"`` to the last page, an error
answer as `ReadError` with its status, message and field). Writes and the watch stream
keep the full client.
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, TypeVar
from urllib.parse import urlencode, urlsplit

import msgspec

T = TypeVar("T")
_NEXT: Final = re.compile(r'\s*<([^>]*)>\s*;\s*rel="?next"?\s*')


class ReadError(Exception):
    """An error answer (status, message, field), or no answer (status 0)."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        self.status = status
        self.message = message
        self.field = field
        super().__init__(f"{status}: {message}" if status else message)


def _next_link(header: str | None) -> str | None:
    """The ``rel="next"`` URL of a ``Link`` header, if any."""
    for part in (header or "").split(","):
        found = _NEXT.fullmatch(part)
        if found is not None:
            return found.group(1)
    return None


def _error(status: int, reason: str, body: bytes) -> ReadError:
    """The error an answer carries: ``error`` (and ``field``) of its JSON body, else
    the start of the body as text."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        field = data.get("field")
        return ReadError(status, data["error"], field if isinstance(field, str) else None)
    return ReadError(status, body[:200].decode(errors="replace") or reason)


class ReadClient:
    """GETs against one server URL (``http://`` or ``https://``)."""

    def __init__(
        self, url: str, token: str | None, *, ca_file: Path | None, timeout_s: float
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ReadError(0, f"bad --server {url!r}: expected http(s)://HOST[:PORT]")
        self.url = url.rstrip("/")
        self.base = parts.path.rstrip("/")
        self.headers = {"Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        try:
            port = parts.port
        except ValueError:
            raise ReadError(0, f"bad --server {url!r}: the port is not a number") from None
        self.connection: http.client.HTTPConnection
        if parts.scheme == "https":
            if ca_file is not None and not ca_file.is_file():
                raise ReadError(0, f"CA file {ca_file}: no such file")
            context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
            self.connection = http.client.HTTPSConnection(
                parts.hostname, port, timeout=timeout_s, context=context
            )
        else:
            self.connection = http.client.HTTPConnection(parts.hostname, port, timeout=timeout_s)

    def close(self) -> None:
        self.connection.close()

    def _get(self, path: str) -> tuple[bytes, str | None]:
        """The body of a successful answer and its ``Link`` header; `ReadError` else."""
        try:
            self.connection.request("GET", path, headers=self.headers)
            response = self.connection.getresponse()
            body = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.connection.close()
            raise ReadError(0, f"cannot reach {self.url}: {error}") from None
        if not 200 <= response.status < 300:
            raise _error(response.status, response.reason, body)
        return body, response.getheader("Link")

    def call(self, path: str, type_: type[T]) -> T:
        """One GET, decoded as ``type_``."""
        body, _ = self._get(self.base + path)
        return msgspec.json.decode(body, type=type_)

    def call_list(
        self, path: str, item_type: type[T], params: Sequence[tuple[str, str]] = ()
    ) -> list[T]:
        """Every row of a paged list, following ``Link: rel="next"`` to the last page."""
        query = f"?{urlencode(list(params))}" if params else ""
        page_type: Any = list[item_type]  # type: ignore[valid-type]
        rows: list[T] = []
        body, link = self._get(self.base + path + query)
        while True:
            rows.extend(msgspec.json.decode(body, type=page_type))
            following = _next_link(link)
            if following is None:
                return rows
            if not following.startswith("/"):
                raise ReadError(0, f"bad next-page link from {self.url}: {following!r}")
            body, link = self._get(self.base + following)
