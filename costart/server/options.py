"""The options of a running service (what `costart serve`'s flags set), checked when
they are made: a bad one is refused before any store is opened."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import msgspec

from costart.server.errors import OptionError

PEER_ORIGIN: Final = re.compile(
    r"(?P<scheme>https?)://(?P<host>[a-z0-9.-]{1,253}|\[[0-9a-f:.]{2,45}\])(?::(?P<port>[0-9]{1,5}))?"
)
"""A peer's board address: an origin (scheme, host, optional port), no path."""
_DEFAULT_PORTS: Final = {"http": "80", "https": "443"}


def peer_origin(address: str) -> str:
    """``address`` as a browser names its origin (lower case, no default port), or
    `OptionError` naming it when it is not an origin."""
    match = PEER_ORIGIN.fullmatch(address.lower())
    if match is None or (match["port"] is not None and not 0 < int(match["port"]) < 65536):
        raise OptionError(
            f"--peer {address!r}: expected a server's origin, scheme://host[:port] with no "
            "path (e.g. http://10.0.0.2:8080)"
        )
    scheme, host, port = match["scheme"], match["host"], match["port"]
    shown_port = "" if port is None or port == _DEFAULT_PORTS[scheme] else f":{int(port)}"
    return f"{scheme}://{host}{shown_port}"


ESTIMATE_DEPTH: Final = 100
"""The shadow planner's default depth (`costart.placement.shadow.DEFAULT_DEPTH`, which a
test holds equal), kept here so that parsing options does not load the planner."""


class ServeOptions(msgspec.Struct, frozen=True, kw_only=True):
    """How to serve: where to listen, how often to schedule, how to lead the store.

    Times are seconds (floats, as a person gives them). ``cert`` and ``key`` go together
    (HTTPS); ``standby`` tails the leader's log and takes over when its lease expires;
    ``advertise`` is the URL clients reach this server at (a standby names it);
    ``rebuild_views`` rebuilds the views even over a log that lost its tail; ``peers``
    are the other servers of this store (leader or standby) as a browser reaches them:
    a board page goes there when this server is gone (ADR 0117); ``estimate_depth``: the
    most waiting groups the expected starts plan (ADR 0136). Raises `OptionError` for a
    value that cannot work."""

    host: str = "127.0.0.1"
    port: int = 8080
    interval_s: float = 1.0
    claim_delay_s: float = 2.0
    simulate_claims: bool = False
    heartbeat_timeout_s: float = 30.0
    cert: Path | None = None
    key: Path | None = None
    standby: bool = False
    lease_duration_s: float = 2.0
    max_connections: int = 2048
    advertise: str | None = None
    rebuild_views: bool = False
    peers: tuple[str, ...] = ()
    estimate_depth: int = ESTIMATE_DEPTH

    def __post_init__(self) -> None:
        for option, seconds in (
            ("--lease-duration", self.lease_duration_s),
            ("--interval", self.interval_s),
            ("--heartbeat-timeout", self.heartbeat_timeout_s),
        ):
            if not seconds > 0:  # also NaN
                raise OptionError(f"{option} must be longer than 0 seconds (got {seconds})")
        if not self.claim_delay_s >= 0:
            raise OptionError(f"--claim-delay must not be negative (got {self.claim_delay_s})")
        if self.max_connections < 1:
            raise OptionError("--max-connections must be at least 1")
        if self.estimate_depth < 1:
            raise OptionError(f"--estimate-depth must be at least 1 (got {self.estimate_depth})")
        if (self.cert is None) != (self.key is None):
            raise OptionError("--cert and --key go together")
        for option, path in (("--cert", self.cert), ("--key", self.key)):
            if path is not None and not path.is_file():
                raise OptionError(f"{option} {path}: no such file")
        origins = [peer_origin(peer) for peer in self.peers]
        if origins != list(self.peers):
            raise OptionError(f"--peer: give each address as its origin: {', '.join(origins)}")
        if len(set(self.peers)) != len(self.peers):
            raise OptionError("--peer: the same address given twice")

    @property
    def tls(self) -> tuple[Path, Path] | None:
        """The certificate and key files of HTTPS, or None for HTTP."""
        return (self.cert, self.key) if self.cert is not None and self.key is not None else None

    @property
    def url(self) -> str:
        """Where clients reach this server: ``advertise``, else the bound address."""
        scheme = "https" if self.tls else "http"
        return self.advertise or f"{scheme}://{self.host}:{self.port}"
