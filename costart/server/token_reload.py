"""The tokens file read again on SIGHUP, as daemons reload their configuration: a token
added, removed or given an ``expires`` takes effect without a restart. A file that no
longer reads is logged and the tokens in use stay (`Tokens.reload`)."""

from __future__ import annotations

import signal
import threading

import structlog

from costart.rest.auth import TokenError, Tokens

log = structlog.get_logger("costart.server")


def log_token_warnings(users: Tokens) -> None:
    for warning in users.warnings:
        log.warning("tokens file", problem=warning)


def reload_tokens(users: Tokens) -> bool:
    """Read ``users``' file again; True if its tokens are the ones in use now."""
    try:
        users.reload()
    except TokenError as error:
        log.error("tokens not reloaded; the previous ones stay", error=str(error))
        return False
    log.info("tokens reloaded", path=str(users.path))
    log_token_warnings(users)
    return True


def reload_tokens_on_hangup(users: Tokens) -> None:
    """On SIGHUP (main thread only), reload in a thread of its own: the handler itself
    takes no lock a request may hold."""

    def hangup(*_: object) -> None:
        threading.Thread(target=reload_tokens, args=(users,), name="tokens-reload").start()

    signal.signal(signal.SIGHUP, hangup)
