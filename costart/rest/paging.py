"""``limit``/``continue`` pagination of the REST list operations.

A list answer is a JSON array of at most ``limit`` rows (``DEFAULT_PAGE_ROWS`` when not
given). When rows remain, the answer carries a ``Link: <URL>; rel="next"`` header (RFC
8288) whose URL repeats the request's query with ``continue=TOKEN``; the last page has no
such header. The token is ``KIND.OFFSET``: the kind of list it belongs to (``groups``,
``members``, ``holds``, ``group-members``, ``group-events``) and the row the next page
starts at; each list's OpenAPI entry declares its own token pattern, so a token the
document calls valid is one the server takes (an offset past the end is an empty page),
and a token of another kind, or one that is not a token, is a 400 naming ``continue``
(ADR 0049 replaced the base64 tokens of ADR 0038 for that). Every list walked here is append-ordered (submission order, log
order, node order), so a row added while a client pages shows up on a later page.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from itertools import islice
from typing import Annotated, Final, TypeVar
from urllib.parse import urlencode

from litestar import Request, Response
from litestar.datastructures import ResponseHeader, State
from litestar.params import Parameter, QueryParameter

from costart.domain.errors import DomainError

S = TypeVar("S")
T = TypeVar("T")
DEFAULT_PAGE_ROWS: Final = 500
MAX_PAGE_ROWS: Final = 1000
OFFSET_DIGITS: Final = 9

Limit = Annotated[
    int | None,
    Parameter(
        ge=1,
        le=MAX_PAGE_ROWS,
        description=f"at most this many rows (default {DEFAULT_PAGE_ROWS})",
    ),
]


def _continue(kind: str) -> QueryParameter:
    return QueryParameter(
        name="continue",
        pattern=f"^{kind}\\.[0-9]{{1,{OFFSET_DIGITS}}}$",
        description='the token from the previous page\'s `Link: rel="next"` URL',
    )


GroupsContinue = Annotated[str | None, _continue("groups")]
MembersContinue = Annotated[str | None, _continue("members")]
HoldsContinue = Annotated[str | None, _continue("holds")]
GroupMembersContinue = Annotated[str | None, _continue("group-members")]
GroupEventsContinue = Annotated[str | None, _continue("group-events")]
LINK_HEADER: Final = ResponseHeader(
    name="Link",
    description='`<URL>; rel="next"` when more rows remain (absent on the last page)',
    documentation_only=True,
)


def encode_token(kind: str, offset: int) -> str:
    """The token for the page of a ``kind`` list that starts at row ``offset``."""
    return f"{kind}.{offset}"


def decode_offset(kind: str, token: str | None) -> int:
    """Where the page a ``continue`` token asks for starts; 0 without a token. A token
    that is not one, or that belongs to another kind of list, is a `DomainError` (400)."""
    if token is None:
        return 0
    found, dot, digits = token.rpartition(".")
    if not dot or not digits.isascii() or not digits.isdigit() or len(digits) > OFFSET_DIGITS:
        raise DomainError(f"continue: {token!r} is not a continue token")
    if found != kind:
        raise DomainError(f"continue: the token is not one for {kind}")
    return int(digits)


def page(
    request: Request[object, object, State],
    kind: str,
    rows: Sequence[T],
    limit: int | None,
    token: str | None,
) -> Response[list[T]]:
    """One page of ``rows`` as the answer to ``request``, with the next page's link."""

    def rows_from(start: int) -> Generator[T, None, None]:
        yield from (rows[i] for i in range(start, len(rows)))

    return streamed_page(request, kind, rows_from, limit, token, lambda row: row)


def streamed_page(
    request: Request[object, object, State],
    kind: str,
    rows_from: Callable[[int], Generator[S, None, None]],
    limit: int | None,
    token: str | None,
    doc: Callable[[S], T],
) -> Response[list[T]]:
    """One page as the answer to ``request``, with the next page's link: ``rows_from(n)``
    yields the list from its ``n``-th row on, and only the page's rows are taken from it
    (and one more, to know whether another page follows) and made into documents
    (``doc``). A list too long to hold is served page by page without ever being whole
    in memory (ADR 0058)."""
    start = decode_offset(kind, token)
    end = start + (limit or DEFAULT_PAGE_ROWS)
    with closing(rows_from(start)) as rows:
        found = list(islice(rows, end - start + 1))
    headers: dict[str, str] = {}
    if len(found) > end - start:
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "continue"]
        query.append(("continue", encode_token(kind, end)))
        # urlencode quotes every value, the token included.
        headers["Link"] = f'<{request.url.path}?{urlencode(query)}>; rel="next"'
    return Response([doc(row) for row in found[: end - start]], headers=headers)
