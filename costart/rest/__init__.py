"""The REST API of `costart serve`: the Litestar app over the service layer
(`costart.service`), bearer-token auth, the watch stream, the wire models (ADR 0007), and
the client the CLI and agents use (ADR 0036). Only HTTP lives here (ADR 0054)."""

from costart._lazy import lazy_exports

__all__ = [
    "ApiError",
    "Client",
    "ErrorBody",
    "TokenError",
    "Tokens",
    "User",
    "WatchClosed",
    "WatchEvent",
    "WatchHub",
    "cancel_as",
    "create_app",
    "deadlines",
    "group_detail",
    "new_token",
    "not_leader_app",
    "publish_leader",
    "read_leader",
    "read_toml",
    "scale_as",
    "token_hash",
    "watch_stream",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ApiError": "costart.rest.client",
        "Client": "costart.rest.client",
        "ErrorBody": "costart.rest.models",
        "TokenError": "costart.rest.auth",
        "Tokens": "costart.rest.auth",
        "User": "costart.rest.auth",
        "WatchClosed": "costart.rest.client",
        "WatchEvent": "costart.rest.client",
        "WatchHub": "costart.rest.watch",
        "cancel_as": "costart.rest.routes",
        "create_app": "costart.rest.http_app",
        "deadlines": "costart.rest.timed",
        "group_detail": "costart.rest.env_values",
        "new_token": "costart.rest.auth",
        "not_leader_app": "costart.rest.not_leader",
        "publish_leader": "costart.rest.not_leader",
        "read_leader": "costart.rest.not_leader",
        "read_toml": "costart.rest.toml_config",
        "scale_as": "costart.rest.dispatch_routes",
        "token_hash": "costart.rest.auth",
        "watch_stream": "costart.rest.watch_routes",
    },
)
