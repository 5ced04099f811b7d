"""What the API reads from a request body, and how it refuses a body it cannot read.

Every refusal here is a 4xx with the `ErrorBody` shape naming the problem, answered
before any handler runs a command, so nothing is written:

- ``Content-Type`` names the body's format. None given means JSON (as documented); a
  spec may also be TOML (``application/toml``). Any other type is 415 naming the types
  the route reads: the body was labelled as something the server cannot know it is.
- A JSON body the framework decodes (reports, scale, node status: `JsonBodyRequest`)
  that is not JSON is 400 ``not valid JSON: ...``, the words `costart validate` uses;
  one nested too deeply for the parser is 400 as well, never the 500 of the
  RecursionError the parser raises.
- The heartbeat, a POST that reads no body, refuses one (`refuse_body`): a report sent
  to its URL by mistake is not answered 200 as if it had been taken. (Cancel, also a
  bodiless POST, still ignores a body.)

Spec bodies are read by `costart.domain.spec_document`, which refuses the same way.
"""

from __future__ import annotations

from typing import Any, Final

from litestar import Request
from litestar.exceptions import ClientException, HTTPException, SerializationException
from litestar.status_codes import HTTP_415_UNSUPPORTED_MEDIA_TYPE

from costart.domain.spec import SpecFormat

_JSON: Final = frozenset({"", "json"})
_TOML: Final = frozenset({"toml", "x-toml"})


class UnsupportedMediaType(HTTPException):
    status_code = HTTP_415_UNSUPPORTED_MEDIA_TYPE


def media_subtype(content_type: str) -> str:
    """The format a ``Content-Type`` names, lowercase: ``application/json;
    charset=utf-8`` and ``application/problem+json`` are ``json``; none given is ``""``."""
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime.rpartition("/")[2].rpartition("+")[2]


def spec_format(content_type: str) -> SpecFormat:
    """The format of a submitted spec: TOML for ``application/toml``, JSON for
    ``application/json`` or no type at all; 415 for any other type."""
    subtype = media_subtype(content_type)
    if subtype in _JSON:
        return "json"
    if subtype in _TOML:
        return "toml"
    raise UnsupportedMediaType(
        f"Content-Type {content_type!r}: a spec is application/json or application/toml"
    )


def _msgspec_reason(detail: str) -> str:
    # The framework decodes the body untyped, so msgspec's path is only "$[...]": the
    # handler's own conversion names the field when the body is JSON at all.
    return detail.split(" - at `$", 1)[0]


class JsonBodyRequest(Request[Any, Any, Any]):
    """The app's request class: its `json` is what the framework decodes a handler's
    ``data`` from, so every JSON body route refuses what it cannot read the same way."""

    async def json(self) -> Any:
        content_type = self.headers.get("content-type", "")
        if media_subtype(content_type) not in _JSON:
            raise UnsupportedMediaType(f"Content-Type {content_type!r}: send application/json")
        try:
            return await super().json()
        except SerializationException as error:
            raise ClientException(f"not valid JSON: {_msgspec_reason(str(error))}") from None
        except RecursionError:
            # msgspec recurses once per array or object level (1,000 brackets reach the
            # interpreter's limit); nothing it holds outlives the unwound call.
            raise ClientException("not valid JSON: nested too deeply to read") from None


def refuse_body(request: Request[Any, Any, Any]) -> None:
    """400 if the request carries a body (the route reads none). Decided from the
    headers, so the body itself is never read."""
    headers = request.headers
    if "transfer-encoding" in headers or headers.get("content-length", "0") != "0":
        raise ClientException("this call takes no body")
