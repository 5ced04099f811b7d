"""The REST API of `costart serve`: the Litestar app, bearer-token auth, the service
loop, the simulated claim driver and the wire models (ADR 0007)."""

from costart._lazy import lazy_exports

__all__ = [
    "ClaimDriver",
    "ErrorBody",
    "Service",
    "TokenError",
    "Tokens",
    "Why",
    "create_app",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ClaimDriver": "costart.rest.claims",
        "ErrorBody": "costart.rest.models",
        "Service": "costart.rest.service",
        "TokenError": "costart.rest.auth",
        "Tokens": "costart.rest.auth",
        "Why": "costart.rest.models",
        "create_app": "costart.rest.app",
    },
)
