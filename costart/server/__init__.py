"""The running service of `costart serve`, composed without a command line: leading a
store (or standing by for it), the views checked against the log, the process that folds
them, and the web app over the service layer.

Importing this package (or `leadership`, `checked_views`, which the direct CLI uses)
loads no web framework: the names that need Litestar and uvicorn resolve on first use.
"""

from costart._lazy import lazy_exports

__all__ = [
    "CheckedViews",
    "Leadership",
    "ViewsProcess",
    "ViewsProcessError",
    "refuse_if_led",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CheckedViews": "costart.server.checked_views",
        "Leadership": "costart.server.leadership",
        "ViewsProcess": "costart.server.views_process",
        "ViewsProcessError": "costart.server.views_process",
        "refuse_if_led": "costart.server.leadership",
    },
)
