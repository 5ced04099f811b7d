"""Error answers as RFC 9457 problem details (``application/problem+json``).

Every error the API gives is one `ProblemDetails`: ``type`` (a stable URI naming the kind of
problem, one per row of `KINDS`), ``title`` (that kind in words), ``status``, ``detail``
(this occurrence, naming the value or field at fault) and, as extension members kept
from the API's first error shape, ``error`` (= ``detail``) and ``field`` (the spec field
or request parameter at fault, when there is one). Scripts that read ``error`` and
``field`` keep working; `costart.client` reads them.

The type URIs are ``urn:costart:problem:SLUG``: identifiers, never fetched (RFC 9457
§3.1.1 allows a type URI that does not resolve). ADR 0083.
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec
from msgspec import Meta

PROBLEM_JSON: Final = "application/problem+json"
TYPE_PREFIX: Final = "urn:costart:problem:"
REALM: Final = 'Bearer realm="costart"'


class Kind(msgspec.Struct, frozen=True):
    slug: str
    title: str


KINDS: Final = {
    400: Kind("bad-request", "The request cannot be read"),
    401: Kind("unauthorized", "No or an unknown bearer token"),
    403: Kind("forbidden", "The caller may not do this"),
    404: Kind("not-found", "No such object"),
    405: Kind("method-not-allowed", "The path does not take this method"),
    409: Kind("conflict", "Conflicts with the object's state or name"),
    413: Kind("too-large", "The body is over the size limit"),
    415: Kind("unsupported-media-type", "The body's Content-Type is not one the route reads"),
    422: Kind("invalid-spec", "The spec is invalid"),
    500: Kind("internal", "Internal error"),
    503: Kind("unavailable", "The controller cannot answer now"),
    504: Kind("gateway-timeout", "A node's agent did not answer in time"),
    507: Kind("out-of-space", "The store is out of space"),
}
"""The kind of each status the API answers; 503 has the more precise kinds below."""

CONTROLLER_STOPPED: Final = Kind("controller-stopped", "This controller stopped")
VIEWS_DAMAGED: Final = Kind("views-damaged", "The views are damaged")
VIEWS_BEHIND: Final = Kind("views-behind", "The views are behind the log")
NOT_LEADER: Final = Kind("not-leader", "This server is a standby, not the leader")


class ProblemDetails(msgspec.Struct, frozen=True, omit_defaults=True):
    """Every error response (RFC 9457 problem details, ``application/problem+json``)."""

    type: Annotated[
        str, Meta(description="the kind of problem: urn:costart:problem:SLUG (not fetched)")
    ]
    title: Annotated[str, Meta(description="the kind of problem in words")]
    status: Annotated[int, Meta(description="the HTTP status code")]
    detail: Annotated[str, Meta(description="this occurrence: what went wrong, naming the value")]
    error: Annotated[str, Meta(description="the same as detail (kept for older clients)")]
    field: Annotated[
        str | None,
        Meta(description="the spec field or request parameter at fault, when there is one"),
    ] = None


def problem(
    status: int, detail: str, field: str | None = None, kind: Kind | None = None
) -> ProblemDetails:
    """The problem document of an error answer (``kind``: default the status's own)."""
    chosen = kind or KINDS.get(status) or Kind(f"http-{status}", f"HTTP {status}")
    return ProblemDetails(
        type=TYPE_PREFIX + chosen.slug,
        title=chosen.title,
        status=status,
        detail=detail,
        error=detail,
        field=field,
    )
