"""The board (docs/design.md §10): a live web page of the groups, served by `serve` at ``/``.

Server-rendered HTML with a small script and style sheet shipped in the package (nothing
fetched from the internet, no build step). The page follows the watch stream with
``EventSource`` and re-reads the rows an event touches. A browser session is the API's
own token in an HttpOnly, SameSite=Strict cookie (`costart.board.session`); the routes
are `costart.board.routes`, the HTML `costart.board.pages`.
"""

from costart._lazy import lazy_exports

__all__ = ["BOARD_ROUTES"]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(__name__, {"BOARD_ROUTES": "costart.board.routes"})
