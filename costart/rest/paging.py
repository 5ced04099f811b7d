"""``limit``/``continue`` pagination of the REST list operations.

A list answer is a JSON array of at most ``limit`` rows (``DEFAULT_PAGE_ROWS`` when not
given). When rows remain, the answer carries a ``Link: <URL>; rel="next"`` header (RFC
8288) whose URL repeats the request's query with ``continue=TOKEN``; the last page has no
such header. The token is opaque to clients: it names the list it belongs to and where the
next page starts, and a token for another list, or one that is not a token, is a 400
naming ``continue``. Every list walked here is append-ordered (submission order, log
order, node order), so a row added while a client pages shows up on a later page.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Annotated, Final, TypeVar
from urllib.parse import urlencode

import msgspec
from litestar import Request, Response
from litestar.datastructures import ResponseHeader, State
from litestar.params import Parameter, QueryParameter

from costart.domain.errors import DomainError

T = TypeVar("T")
DEFAULT_PAGE_ROWS: Final = 500
MAX_PAGE_ROWS: Final = 1000
MAX_TOKEN_CHARS: Final = 200

Limit = Annotated[
    int | None,
    Parameter(
        ge=1,
        le=MAX_PAGE_ROWS,
        description=f"at most this many rows (default {DEFAULT_PAGE_ROWS})",
    ),
]
Continue = Annotated[
    str | None,
    QueryParameter(
        name="continue",
        max_length=MAX_TOKEN_CHARS,
        description='the token from the previous page\'s `Link: rel="next"` URL',
    ),
]
LINK_HEADER: Final = ResponseHeader(
    name="Link",
    description='`<URL>; rel="next"` when more rows remain (absent on the last page)',
    documentation_only=True,
)


class _Token(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    list: str
    offset: int


_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(_Token)


def encode_token(list_name: str, offset: int) -> str:
    """The opaque token for the page of ``list_name`` that starts at row ``offset``."""
    raw = _ENCODER.encode(_Token(list=list_name, offset=offset))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_offset(list_name: str, token: str | None) -> int:
    """Where the page a ``continue`` token asks for starts; 0 without a token. A token
    that is not one, or that belongs to another list, is a `DomainError` (400)."""
    if token is None:
        return 0
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        decoded = _DECODER.decode(raw)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        raise DomainError(f"continue: {token!r} is not a continue token") from None
    if decoded.list != list_name or decoded.offset < 0:
        raise DomainError(f"continue: the token is not one for {list_name}")
    return decoded.offset


def page(
    request: Request[object, object, State],
    list_name: str,
    rows: Sequence[T],
    limit: int | None,
    token: str | None,
) -> Response[list[T]]:
    """One page of ``rows`` as the answer to ``request``, with the next page's link."""
    start = decode_offset(list_name, token)
    end = start + (limit or DEFAULT_PAGE_ROWS)
    headers: dict[str, str] = {}
    if end < len(rows):
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "continue"]
        query.append(("continue", encode_token(list_name, end)))
        # urlencode quotes every value, the token included.
        headers["Link"] = f'<{request.url.path}?{urlencode(query)}>; rel="next"'
    return Response(list(rows[start:end]), headers=headers)
