"""Why a server does not start, or why a fold failed, as errors a host can catch
without importing the web framework. The command line maps them to its exit codes."""

from __future__ import annotations


class OptionError(ValueError):
    """A serve option (or the options together) cannot work: refused before anything is
    opened, like a zero timeout in a spec. The message names the option as `costart
    serve` spells it."""


class LeaseHeldError(Exception):
    """Another process holds the store's lease: this one may only stand by."""

    def __init__(self, holder: str) -> None:
        self.holder = holder
        super().__init__(f"the store's lease is held by {holder}; start this one with --standby")


class ViewsProcessError(RuntimeError):
    """The views process failed in a way its own error cannot say (it died, or its error
    cannot be handed over).

    Defined here, not in the module the child runs as ``__main__``: the child pickles it
    and the server unpickles it by its module's name, which must be importable."""
