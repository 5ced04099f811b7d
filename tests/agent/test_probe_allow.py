"""`costart agent --probe-allow CIDR:PORT`: read whole, every mistake named."""

from __future__ import annotations

from ipaddress import ip_address

import pytest
from typer.testing import CliRunner

from costart.agent.probe_targets import MAX_ALLOW_RULES, parse_allow, parse_allow_rules
from costart.cli.main import app

GOOD = [
    ("10.0.0.0/8:5432", "10.0.0.0/8:5432"),
    ("127.0.0.1:8000-8010", "127.0.0.1/32:8000-8010"),
    ("0.0.0.0/0:*", "0.0.0.0/0:*"),
    ("[fd12:3456::/64]:443", "[fd12:3456::/64]:443"),
    ("[::1]:9000", "[::1/128]:9000"),
    ("192.168.1.0/24:1-65535", "192.168.1.0/24:*"),
]
BAD = [
    ("10.0.0.0/8", "expected CIDR:PORT"),
    ("10.0.0.0/8:", "expected CIDR:PORT"),
    ("10.0.0.0/8:5432\n", "expected CIDR:PORT"),  # read whole: no trailing newline
    (" 10.0.0.0/8:5432", "expected CIDR:PORT"),
    ("db.internal:5432", "expected CIDR:PORT"),
    ("fd12::/64:443", "expected CIDR:PORT"),  # IPv6 needs its brackets
    ("[10.0.0.0/8]:80", "not an IPv6 network"),
    ("10.0.0.1/8:22", "has host bits set"),
    ("10.0.0.0/33:22", "not an IPv4 network"),
    ("300.0.0.0/8:22", "not an IPv4 network"),
    ("10.0.0.0/8:0", "ports must be"),
    ("10.0.0.0/8:70000", "ports must be"),
    ("10.0.0.0/8:9000-8000", "ports must be"),
    ("10.0.0.0/8:80,443", "expected CIDR:PORT"),
    ("169.254.0.0/16:*", "never probed"),
    ("169.254.169.254:80", "never probed"),
    ("100.100.100.200/32:80", "never probed"),
    ("[fe80::/64]:22", "never probed"),
]


@pytest.mark.parametrize(("text", "shown"), GOOD)
def test_a_rule_is_read_as_a_network_and_a_port_range(text, shown):
    assert str(parse_allow(text)) == shown


@pytest.mark.parametrize(("text", "reason"), BAD)
def test_a_bad_rule_is_refused_naming_the_value(text, reason):
    with pytest.raises(ValueError) as raised:
        parse_allow(text)
    assert repr(text) in str(raised.value)
    assert reason in str(raised.value)


def test_a_rule_covers_its_network_on_its_ports_only():
    rule = parse_allow("10.0.0.0/8:8000-8010")
    assert rule.covers(ip_address("10.9.8.7"), 8000)
    assert rule.covers(ip_address("10.9.8.7"), 8010)
    assert not rule.covers(ip_address("10.9.8.7"), 8011)
    assert not rule.covers(ip_address("11.0.0.1"), 8000)
    assert not rule.covers(ip_address("::1"), 8000)


def test_the_rules_are_limited():
    with pytest.raises(ValueError, match="the limit is"):
        parse_allow_rules(["10.0.0.0/8:22"] * (MAX_ALLOW_RULES + 1))


def test_a_bad_probe_allow_option_is_a_usage_error_naming_it(monkeypatch):
    # Refused before the agent reads its token (which would scrub this process).
    monkeypatch.delenv("COSTART_TOKEN", raising=False)
    args = ["agent", "--node", "n1", "--server", "http://127.0.0.1:9"]
    args += ["--probe-allow", "10.0.0.0/8:22", "--probe-allow", "10.0.0.1/8:22"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert (
        "--probe-allow '10.0.0.1/8:22': not an IPv4 network: 10.0.0.1/8 has host bits set"
        in result.output
    )
