"""Addresses no probe may reach, on any node (docs/design.md §11): link-local networks and the
cloud metadata services, where a machine's own credentials are handed out to whoever
asks from it. A probe runs on the node, so a probe that could reach them would be a way
for a group's owner to read the node's identity.

Submit refuses a probe that names one literally or by a well-known name
(`costart.domain.run_table`); the agent refuses again on every address a name resolves
to, at connect time, whatever its ``--probe-allow`` rules say (`costart.agent.probe_targets`).
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Final

IPAddress = IPv4Address | IPv6Address

LINK_LOCAL: Final = (IPv4Network("169.254.0.0/16"), IPv6Network("fe80::/10"))
METADATA_ADDRESSES: Final = frozenset(
    ip_address(text)
    for text in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean, Hetzner, ...
        "169.254.170.2",  # AWS ECS task credentials
        "fd00:ec2::254",  # AWS over IPv6
        "fd20:ce::254",  # GCP over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud Classic
        "168.63.129.16",  # Azure's host endpoint (WireServer)
    )
)
# Names that resolve to a metadata service inside its cloud (compared lower case,
# without a trailing dot). The agent's check on the resolved address is what holds;
# these only let submit say so early.
METADATA_NAMES: Final = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.platformequinix.com",
        "metadata.packet.net",
    }
)
# IPv6 forms that carry an IPv4 address through to it: NAT64's well-known prefix.
NAT64: Final = IPv6Network("64:ff9b::/96")
# The IPv4 forms inet_aton (and so getaddrinfo) reads: 1 to 4 parts, each decimal, octal
# (leading 0) or hex (0x); the last part fills the bytes left ("2852039166" is an address).
_INET_ATON_PART = r"(?:0[xX][0-9A-Fa-f]+|[0-9]+)"
_INET_ATON = re.compile(rf"{_INET_ATON_PART}(?:\.{_INET_ATON_PART}){{0,3}}")


def plain_address(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv4-mapped (``::ffff:a.b.c.d``) or NAT64 address reaches;
    any other address as it is."""
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in NAT64:
            return IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def never_reached(address: IPAddress) -> str | None:
    """Why no probe may reach ``address`` (a link-local or metadata address), else None."""
    address = plain_address(address)
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if any(address in network for network in LINK_LOCAL):
        return "a link-local address"
    return None


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` names literally (``[v6]`` or bare v6, with or without a
    zone; dotted IPv4 or any other form inet_aton reads), else None (a name)."""
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ip_address(text)
    except ValueError:
        pass
    if not _INET_ATON.fullmatch(text):
        return None
    try:
        parts = [_aton_part(part) for part in text.split(".")]
    except ValueError:  # an octal part with an 8 or 9: inet_aton refuses it too
        return None
    *leading, last = parts
    if any(part > 0xFF for part in leading) or last >= 1 << (8 * (4 - len(leading))):
        return None
    value = last
    for shift, part in enumerate(reversed(leading)):
        value |= part << (8 * (4 - len(leading) + shift))
    return IPv4Address(value)


def _aton_part(part: str) -> int:
    if part[:2].lower() == "0x":
        return int(part[2:], 16)
    return int(part, 8) if part.startswith("0") else int(part)


def never_probed(host: str) -> str | None:
    """Why a probe may not name ``host`` (a metadata name, or a literal address no probe
    may reach), else None. A name that merely resolves to one is the agent's to refuse."""
    if host.lower().rstrip(".") in METADATA_NAMES:
        return "a cloud metadata host name"
    address = literal_address(host)
    return never_reached(address) if address is not None else None
