"""Where an ``http`` or ``tcp`` probe may connect from this node (docs/design.md §11).

A probe is written by a group's owner and runs on the node, so without a rule it could
scan the node's network or read a cloud metadata service. It may reach only

- the group's own member addresses (``host:port`` in its peers, `costart.agent.taskenv`;
  a member without a ``port`` has none), and
- what the operator allows: ``costart agent --probe-allow CIDR:PORT`` (repeatable;
  ``CIDR:LOW-HIGH``, ``CIDR:*`` for any port; IPv6 as ``[CIDR]:PORT``);

and never a link-local or cloud metadata address (`costart.domain.probe_hosts`), even
if a rule covers it. The check is on the addresses the target's name resolves to, once
per check: every one of them must pass, and the probe connects to those addresses
themselves, never to the name again, so a second answer from DNS cannot slip past.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Final, NamedTuple

from costart.domain import RunSpec, never_reached, plain_address
from costart.projections import MemberView

IPAddress = IPv4Address | IPv6Address
MAX_PORT: Final = 65535
MAX_ALLOW_RULES: Final = 256
_ALLOW = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+(?:/[0-9]{1,3})?)\]|(?P<v4>[0-9.]+(?:/[0-9]{1,2})?))"
    r":(?P<ports>\*|(?P<low>[0-9]{1,5})(?:-(?P<high>[0-9]{1,5}))?)"
)


class ProbeRefused(Exception):
    """The probe's target may not be reached from this node: it can never pass (the
    message names the target and why)."""


class AllowRule(NamedTuple):
    """One ``--probe-allow`` rule: addresses in ``network`` on ports ``low``..``high``."""

    network: IPv4Network | IPv6Network
    low: int
    high: int

    def covers(self, address: IPAddress, port: int) -> bool:
        return address in self.network and self.low <= port <= self.high

    def __str__(self) -> str:
        net = f"[{self.network}]" if self.network.version == 6 else str(self.network)
        if (self.low, self.high) == (1, MAX_PORT):
            return f"{net}:*"
        return f"{net}:{self.low}" + (f"-{self.high}" if self.high != self.low else "")


def parse_allow(text: str) -> AllowRule:
    """``CIDR:PORT``, ``CIDR:LOW-HIGH`` or ``CIDR:*`` (IPv6: ``[CIDR]:PORT``); a
    `ValueError` naming ``text`` and what is wrong with it."""
    match = _ALLOW.fullmatch(text)
    if match is None:
        raise ValueError(
            f"{text!r}: expected CIDR:PORT, CIDR:LOW-HIGH or CIDR:* (IPv6 as [CIDR]:PORT)"
        )
    network: IPv4Network | IPv6Network
    try:  # strict: a network with host bits set is a typo worth naming
        network = IPv6Network(match["v6"]) if match["v6"] else IPv4Network(match["v4"])
    except ValueError as error:
        version = "IPv6" if match["v6"] else "IPv4"
        raise ValueError(f"{text!r}: not an {version} network: {error}") from None
    if match["ports"] == "*":
        low, high = 1, MAX_PORT
    else:
        low = int(match["low"])
        high = int(match["high"] or low)
        if not 1 <= low <= high <= MAX_PORT:
            raise ValueError(f"{text!r}: ports must be 1 <= LOW <= HIGH <= {MAX_PORT}")
    if _only_never_reached(network):
        raise ValueError(f"{text!r}: link-local and cloud metadata addresses are never probed")
    return AllowRule(network, low, high)


def _only_never_reached(network: IPv4Network | IPv6Network) -> bool:
    """A rule for nothing but addresses refused whatever the rules say: a mistake worth
    a word at start rather than a puzzling refusal at the first probe. Both ends are
    enough to look at: link-local is one block per family, and the metadata addresses
    outside it are single addresses far apart."""
    first, last = network.network_address, network.broadcast_address
    return never_reached(first) is not None and never_reached(last) is not None


def parse_allow_rules(texts: Iterable[str]) -> tuple[AllowRule, ...]:
    rules = tuple(parse_allow(text) for text in texts)
    if len(rules) > MAX_ALLOW_RULES:
        raise ValueError(f"{len(rules)} --probe-allow rules; the limit is {MAX_ALLOW_RULES}")
    return rules


def group_addresses(
    members: Sequence[MemberView], host_of: Callable[[str], str]
) -> frozenset[tuple[str, int]]:
    """The ``(host, port)`` of every task of every member with a ``port``: the
    ``host:port`` addresses `costart.agent.taskenv.peers` hands the tasks."""
    found: set[tuple[str, int]] = set()
    for member in members:
        run: RunSpec | None = member.run
        if run is None or run.port is None:
            continue
        found |= {(host_of(task.node), run.port + task.index) for task in member.tasks}
    return frozenset(found)


class Endpoint(NamedTuple):
    """One checked address of a target: connect a ``family`` socket to ``sockaddr``."""

    family: socket.AddressFamily
    sockaddr: tuple[str, int] | tuple[str, int, int, int]
    address: IPAddress


def resolve(host: str, port: int) -> list[Endpoint]:
    """Every address ``host`` names (an `OSError` when it names none, yet)."""
    found = []
    for family, _type, _proto, _name, sockaddr in socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM
    ):
        if family in (socket.AF_INET, socket.AF_INET6):
            found.append(Endpoint(family, sockaddr, ip_address(sockaddr[0])))  # type: ignore[arg-type]
    if not found:
        raise OSError(f"{host}: no IPv4 or IPv6 address")
    return found


@dataclass(frozen=True)
class TargetPolicy:
    """What one group's probes may reach on this node: ``members``, its member
    addresses (`group_addresses`), and the operator's ``allow`` rules."""

    allow: tuple[AllowRule, ...] = ()
    members: frozenset[tuple[str, int]] = frozenset()

    def endpoints(self, host: str, port: int) -> list[Endpoint]:
        """``host`` resolved once, every address checked: connect to these and never
        to ``host`` again. `ProbeRefused` when any address may not be reached (a name
        that also resolves to a metadata address is not a target); `OSError` when
        ``host`` does not resolve (yet: a miss, not a refusal)."""
        endpoints = resolve(host, port)
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        for endpoint in endpoints:
            why = self._refusal(endpoint.address, port)
            if why is None:
                continue
            if not _same(host, endpoint.address):
                why = f"it resolves to {endpoint.address}, {why}"
            raise ProbeRefused(f"probe target {shown} is not allowed on this node: {why}")
        return endpoints

    def _refusal(self, address: IPAddress, port: int) -> str | None:
        never = never_reached(address)
        if never is not None:
            return f"{never}, never allowed (whatever --probe-allow says)"
        plain = plain_address(address)
        if any(rule.covers(plain, port) for rule in self.allow):
            return None
        if plain in self._member_addresses(port):
            return None
        return "not a member address of the group and not in --probe-allow"

    def _member_addresses(self, port: int) -> set[IPAddress]:
        """The addresses of the group's tasks serving on ``port`` (a member's host is
        the operator's ``--peer-host``, or a node's name: one that does not resolve
        names no address)."""
        found: set[IPAddress] = set()
        for host, member_port in sorted(self.members):
            if member_port != port:
                continue
            try:
                found |= {plain_address(e.address) for e in resolve(host, port)}
            except OSError:
                continue
        return found


def _same(host: str, address: IPAddress) -> bool:
    try:
        return ip_address(host.strip("[]")) == address
    except ValueError:
        return False
