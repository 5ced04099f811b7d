"""Addresses no probe may reach: every literal form of them is recognised at submit, and
nothing else is refused (a name that only resolves to one is the agent's to refuse)."""

from __future__ import annotations

import socket
from ipaddress import ip_address

import pytest

from costart.domain.probe_hosts import literal_address, never_probed, never_reached
from costart.domain.spec import spec_from_object
from tests.domain.test_run_table import doc, run

REFUSED = [
    ("169.254.169.254", "a cloud metadata address"),
    ("2852039166", "a cloud metadata address"),  # one 32-bit number
    ("0xa9fea9fe", "a cloud metadata address"),
    ("0251.0376.0251.0376", "a cloud metadata address"),  # octal parts
    ("169.254.43518", "a cloud metadata address"),  # the last part fills two bytes
    ("[::ffff:169.254.169.254]", "a cloud metadata address"),  # IPv4-mapped
    ("64:ff9b::a9fe:a9fe", "a cloud metadata address"),  # NAT64
    ("fd00:ec2::254", "a cloud metadata address"),
    ("100.100.100.200", "a cloud metadata address"),
    ("169.254.0.1", "a link-local address"),
    ("fe80::1%eth0", "a link-local address"),
    ("[FE80::abcd]", "a link-local address"),
    ("metadata", "a cloud metadata host name"),
    ("Metadata.Google.Internal.", "a cloud metadata host name"),
]
ALLOWED = ["10.0.0.1", "169.255.0.1", "169.253.255.255", "fe00::1", "::1", "127.0.0.1",
           "metadata.example.com", "models.internal", "08", "1.2.3.256"]  # fmt: skip


@pytest.mark.parametrize(("host", "why"), REFUSED)
def test_every_literal_form_of_a_forbidden_address_is_refused(host, why):
    assert never_probed(host) == why


@pytest.mark.parametrize("host", ALLOWED)
def test_other_hosts_are_left_alone(host):
    assert never_probed(host) is None


@pytest.mark.parametrize(
    "host", ["2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "10.1"]
)
def test_a_literal_is_read_as_the_resolver_reads_it(host):
    resolved = socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)[0][4][0]
    assert literal_address(host) == ip_address(resolved)


def test_a_name_or_a_malformed_number_is_not_a_literal():
    assert literal_address("models.internal") is None
    assert literal_address("08") is None  # 8 is no octal digit
    assert literal_address("1.2.3.256") is None
    assert never_reached(ip_address("10.1.2.3")) is None


def test_a_probe_of_an_ordinary_address_is_accepted_at_submit():
    spec = spec_from_object(
        doc(
            run(
                probes={
                    "weights": {"tcp": "169.255.0.1:22"},
                    "device": {"http": "http://10.0.0.1/"},
                }
            )
        )
    )
    assert spec.member("trainer").run is not None
