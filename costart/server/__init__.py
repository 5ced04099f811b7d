"""The running service of `costart serve`, composed without a command line (`Server`,
from `Settings` and `ServeOptions`): leading a store or standing by for it, the lease
kept while serving, the views checked against the log and folded in a process of their
own, the web app over the service layer, and a graceful stop that hands over.

Importing this package (or `leadership`, `checked_views`, which the direct CLI uses)
loads no web framework: `Server` resolves on first use (ADR 0063).
"""

from costart._lazy import lazy_exports

__all__ = [
    "ESTIMATE_DEPTH",
    "CheckedViews",
    "Leadership",
    "LeaseHeldError",
    "OptionError",
    "ServeOptions",
    "Server",
    "ViewsProcess",
    "ViewsProcessError",
    "log_token_warnings",
    "peer_origin",
    "refuse_if_led",
    "reload_tokens_on_hangup",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CheckedViews": "costart.server.checked_views",
        "ESTIMATE_DEPTH": "costart.server.options",
        "LeaseHeldError": "costart.server.errors",
        "Leadership": "costart.server.leadership",
        "OptionError": "costart.server.errors",
        "ServeOptions": "costart.server.options",
        "Server": "costart.server.runtime",
        "ViewsProcess": "costart.server.views_process",
        "ViewsProcessError": "costart.server.errors",
        "log_token_warnings": "costart.server.token_reload",
        "peer_origin": "costart.server.options",
        "refuse_if_led": "costart.server.leadership",
        "reload_tokens_on_hangup": "costart.server.token_reload",
    },
)
