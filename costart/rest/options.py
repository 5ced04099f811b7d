"""``OPTIONS`` on every path, answering ``Allow`` with every method the path takes.

Litestar makes an ``OPTIONS`` handler for the first handler registered on a path and keeps
it when a second handler (another method) joins the path, so its ``Allow`` named only the
first method (``GET /v1/groups`` missing beside ``POST``). Declaring one ``OPTIONS``
handler per path before the others, from the whole handler list, makes the framework
create none (found by schemathesis's ``allow_header_conformance``; ADR 0049).
"""

from __future__ import annotations

from collections.abc import Sequence

from litestar import Response, route
from litestar.enums import HttpMethod
from litestar.handlers import HTTPRouteHandler


def allowed_methods(handlers: Sequence[HTTPRouteHandler]) -> dict[str, str]:
    """Path -> the ``Allow`` value for it: its handlers' methods and OPTIONS, sorted."""
    methods: dict[str, set[str]] = {}
    for handler in handlers:
        for path in handler.paths:
            methods.setdefault(path, {"OPTIONS"}).update(handler.http_methods)
    return {path: ", ".join(sorted(names)) for path, names in sorted(methods.items())}


def options_handlers(handlers: Sequence[HTTPRouteHandler]) -> list[HTTPRouteHandler]:
    """One ``OPTIONS`` handler per path of ``handlers``: 204 with ``Allow``, no auth."""
    return [_options_for(path, allow) for path, allow in allowed_methods(handlers).items()]


def _options_for(path: str, allow: str) -> HTTPRouteHandler:
    def options() -> Response[None]:
        return Response(None, status_code=204, headers={"Allow": allow})

    return route(
        path,
        http_method=[HttpMethod.OPTIONS],
        include_in_schema=False,
        sync_to_thread=False,
        name=f"options:{path}",
    )(options)
