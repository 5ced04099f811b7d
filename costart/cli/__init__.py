"""The `costart` command line (ADR 0006)."""

from costart._lazy import lazy_exports

__all__ = [
    "app",
    "main",
]

# Resolved on first use: importing one light module must not import the heavy ones.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "app": "costart.cli.main",
        "main": "costart.cli.main",
    },
)
