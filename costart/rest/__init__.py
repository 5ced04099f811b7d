"""The REST API of `costart serve`: the Litestar app over the service layer
(`costart.service`), bearer-token auth, the watch stream, the wire models (ADR 0007), and
the client the CLI and agents use (ADR 0036). Only HTTP lives here (ADR 0054)."""

from costart._lazy import lazy_exports

__all__ = [
    "LOG_BATCH_BYTES",
    "LOG_MAX_PIECES",
    "LOG_PIECE_BYTES",
    "ApiError",
    "Client",
    "ErrorBody",
    "LogChunk",
    "LogPiece",
    "LogPieces",
    "LogRead",
    "TokenError",
    "Tokens",
    "WatchClosed",
    "WatchEvent",
    "WatchHub",
    "base64_text",
    "create_app",
    "new_token",
    "not_leader_app",
    "publish_leader",
    "read_leader",
    "read_toml",
    "token_hash",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ApiError": "costart.rest.client",
        "Client": "costart.rest.client",
        "ErrorBody": "costart.rest.models",
        "LOG_BATCH_BYTES": "costart.rest.log_wire",
        "LOG_MAX_PIECES": "costart.rest.log_wire",
        "LOG_PIECE_BYTES": "costart.rest.log_wire",
        "LogChunk": "costart.rest.log_wire",
        "LogPiece": "costart.rest.log_wire",
        "LogPieces": "costart.rest.log_wire",
        "LogRead": "costart.rest.log_wire",
        "TokenError": "costart.rest.auth",
        "Tokens": "costart.rest.auth",
        "WatchClosed": "costart.rest.client",
        "WatchEvent": "costart.rest.client",
        "WatchHub": "costart.rest.watch",
        "base64_text": "costart.rest.log_wire",
        "create_app": "costart.rest.http_app",
        "new_token": "costart.rest.auth",
        "not_leader_app": "costart.rest.not_leader",
        "publish_leader": "costart.rest.not_leader",
        "read_leader": "costart.rest.not_leader",
        "read_toml": "costart.rest.toml_config",
        "token_hash": "costart.rest.auth",
    },
)
