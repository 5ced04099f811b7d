"""The run table's refusals in the exact words its user reads (field path and reason),
and each of its limits accepted at the limit itself: one row per check in
`domain/run_table.py`.

`test_run_table.py` proves that a refusal writes nothing; this one pins the words and the
bounds, so a message that loses its field or a limit that moves by one fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from costart.domain.errors import SpecError
from costart.domain.run_table import (
    MAX_ARG_CHARS,
    MAX_ARGV,
    MAX_ENV,
    MAX_FAIL_AFTER,
    MAX_PATH_CHARS,
    Probe,
    RunSpec,
    check_probe_ports,
    probe_port,
)
from costart.domain.spec import spec_from_object
from tests.domain.test_run_table import doc, run
from tests.domain.test_spec_messages import plain_id

RUN = "members[0].run"
PROBE = f"{RUN}.probes.weights"
LONG_PATH = "p" * (MAX_PATH_CHARS + 1)


def probe(**fields: Any) -> dict[str, Any]:
    return doc(run(probes={"weights": fields}))


def env_of(count: int) -> dict[str, str]:
    return {f"V{i:03d}": "x" for i in range(count)}


REFUSED = [
    (doc(run(argv=[])), f"{RUN}.argv", "empty: name the program to run"),
    (
        doc(run(argv=["a"] * (MAX_ARGV + 1))),
        f"{RUN}.argv",
        f"{MAX_ARGV + 1} arguments; the limit is {MAX_ARGV}",
    ),
    (doc(run(argv=[""])), f"{RUN}.argv[0]", "empty"),
    (doc(run(argv=["a\tb"])), f"{RUN}.argv[0]", "control character in 'a\\tb'"),
    (doc(run(argv=["a\x00b"])), f"{RUN}.argv[0]", "control character in 'a\\x00b'"),
    (doc(run(cwd="")), f"{RUN}.cwd", "empty"),
    (doc(run(cwd=LONG_PATH)), f"{RUN}.cwd", f"longer than {MAX_PATH_CHARS} characters"),
    (doc(run(log_dir=LONG_PATH)), f"{RUN}.log_dir", f"longer than {MAX_PATH_CHARS} characters"),
    (
        doc(run(env=env_of(MAX_ENV + 1))),
        f"{RUN}.env",
        f"{MAX_ENV + 1} variables; the limit is {MAX_ENV}",
    ),
    (doc(run(env={"A-B": "x"})), f"{RUN}.env.A-B", "bad variable name: letters, digits and _"),
    (
        doc(run(env={"BIG": "x" * (MAX_ARG_CHARS + 1)})),
        f"{RUN}.env.BIG",
        f"longer than {MAX_ARG_CHARS} characters or a NUL",
    ),
    (
        doc(run(env={"NUL": "a\x00b"})),
        f"{RUN}.env.NUL",
        f"longer than {MAX_ARG_CHARS} characters or a NUL",
    ),
    (doc(run(port=0)), f"{RUN}.port", "must be between 1 and 65535 (got 0)"),
    (doc(run(port=65535)), f"{RUN}.port", "2 tasks from port 65535 would pass 65535"),
    (
        doc(run(probes={"gpus": {"file": "/x"}})),
        f"{RUN}.probes.gpus",
        "'gpus' is not a claim of this member (claims: weights, device)",
    ),
    (
        doc(None, {"argv": ["r"], "probes": {"gpus": {"file": "/x"}}}),
        "members[1].run.probes.gpus",
        "'gpus' is not a claim of this member (claims: none)",
    ),
    (probe(), PROBE, "set exactly one of exec, http, tcp, file (got none)"),
    (probe(file="/x", period="0s"), f"{PROBE}.period", "'0s': must be longer than 0s"),
    (probe(file="/x", period="25h"), f"{PROBE}.period", "'25h' exceeds the limit of 24h"),
    (
        probe(file="/x", fail_after=MAX_FAIL_AFTER + 1),
        f"{PROBE}.fail_after",
        f"must be between 0 and {MAX_FAIL_AFTER} (got {MAX_FAIL_AFTER + 1})",
    ),
    (probe(file=""), f"{PROBE}.file", "empty"),
    (probe(file=LONG_PATH), f"{PROBE}.file", f"longer than {MAX_PATH_CHARS} characters"),
    (probe(http=""), f"{PROBE}.http", "empty"),
    (
        probe(http="http://db:99999/ready"),
        f"{PROBE}.http",
        "bad URL 'http://db:99999/ready': Port out of range 0-65535",
    ),
    (probe(http="http://db:0/ready"), f"{PROBE}.http", "bad URL 'http://db:0/ready': port 0"),
    (
        probe(http="ftp://db/ready"),
        f"{PROBE}.http",
        "bad URL 'ftp://db/ready': expected http://HOST[:PORT]/PATH or https://",
    ),
    (probe(tcp="db"), f"{PROBE}.tcp", "bad address 'db': expected HOST:PORT"),
    (probe(tcp="db:0"), f"{PROBE}.tcp", "bad address 'db:0': port must be between 1 and 65535"),
    (
        probe(tcp="db:65536"),
        f"{PROBE}.tcp",
        "bad address 'db:65536': port must be between 1 and 65535",
    ),
]


@pytest.mark.parametrize(
    ("spec", "path", "reason"),
    REFUSED,
    ids=[plain_id(i, f"{r[1]} {r[2]}") for i, r in enumerate(REFUSED)],
)
def test_a_refusal_names_the_field_and_says_exactly_what_is_wrong(spec, path, reason):
    with pytest.raises(SpecError) as raised:
        spec_from_object(spec)
    assert (raised.value.path, raised.value.reason) == (path, reason)


def trainer_run(spec: dict[str, Any]) -> RunSpec:
    got = spec_from_object(spec).member("trainer").run
    assert got is not None
    return got


def test_every_limit_is_accepted_at_the_limit_itself():
    longest = "p" * MAX_PATH_CHARS
    table = trainer_run(
        doc(
            run(
                argv=["a"] * MAX_ARGV,
                cwd=longest,
                log_dir=longest,
                env=env_of(MAX_ENV - 1) | {"WIDE": "x" * MAX_ARG_CHARS},
                grace="24h",
                port=65534,  # two tasks: 65534 and 65535, the last port there is
            )
        )
    )
    assert (len(table.argv), table.cwd, table.log_dir) == (MAX_ARGV, longest, longest)
    assert len(table.env) == MAX_ENV
    assert (table.grace_ns, table.port) == (24 * 3600 * 10**9, 65534)
    assert table.ports(2) == range(65534, 65536)


def test_the_shortest_durations_and_the_lowest_ports_are_accepted():
    table = trainer_run(doc(run(grace="1ns", port=1)))
    assert (table.grace_ns, table.port) == (1, 1)
    weights = trainer_run(probe(tcp="db:1", period="1ns", timeout="1ns")).probes[0]
    assert (weights.period_ns, weights.timeout_ns, weights.target) == (1, 1, "db:1")


@pytest.mark.parametrize(
    ("fields", "kind", "target"),
    [
        ({"file": "p" * MAX_PATH_CHARS}, "file", "p" * MAX_PATH_CHARS),
        ({"tcp": "db:65535"}, "tcp", "db:65535"),
        ({"http": "http://db:1/ready"}, "http", "http://db:1/ready"),
        ({"http": "http://db:65535/ready"}, "http", "http://db:65535/ready"),
    ],
    ids=["file-longest-path", "tcp-port-65535", "http-port-1", "http-port-65535"],
)
def test_a_probe_target_at_its_bound_is_accepted(fields, kind, target):
    weights = trainer_run(probe(fail_after=MAX_FAIL_AFTER, **fields)).probes[0]
    assert (weights.kind, weights.target, weights.fail_after) == (kind, target, MAX_FAIL_AFTER)


def test_a_member_without_a_port_serves_on_none():
    table = RunSpec(argv=("a",), grace_ns=1, log_dir="l")
    assert list(table.ports(3)) == []


@pytest.mark.parametrize(
    ("kind", "target", "port"),
    [
        ("http", "http://db/ready", 80),
        ("http", "https://db/ready", 443),
        ("http", "https://db:8443/ready", 8443),
        ("tcp", "db:5432", 5432),
        ("tcp", "db", None),  # no HOST:PORT, so no port (the spec refuses it earlier)
        ("file", "/data/w.bin", None),
    ],
    ids=["http-default", "https-default", "https-explicit", "tcp", "tcp-no-port", "file"],
)
def test_a_probe_connects_to_its_port_or_its_schemes_default(kind, target, port):
    assert probe_port(Probe("c", kind, 1, 1, target=target)) == port


def test_a_probe_of_the_default_https_port_is_refused_when_a_member_serves_there():
    spec = doc(run(port=443, probes={"weights": {"http": "https://127.0.0.1/ready"}}))
    with pytest.raises(SpecError) as raised:
        spec_from_object(spec)
    assert (raised.value.path, raised.value.reason.split(":")[0]) == (
        PROBE,
        "port 443 is the member's own endpoint",
    )


def served(port: int | None, *probes: Probe) -> RunSpec:
    return RunSpec(argv=("a",), grace_ns=1, log_dir="l", port=port, probes=probes)


@pytest.mark.parametrize(
    "runs",
    [
        [("m0", served(9100), 2), ("m1", served(9102), 1)],  # 9100-9101, then 9102
        [("m0", served(9102), 1), ("m1", served(9100), 2)],  # 9102, then 9100-9101
        [("m0", served(9100), 2), ("m1", served(9200), 3)],
        [("m0", served(9200), 1), ("m1", served(9100), 1)],
        [("m0", served(None), 4), ("m1", served(9100), 1)],
    ],
    ids=["adjacent-above", "adjacent-below", "apart-above", "apart-below", "one-without-port"],
)
def test_ports_that_do_not_overlap_are_accepted_however_close(runs):
    check_probe_ports(runs)


def test_an_overlap_after_a_member_without_a_run_table_is_refused_with_both_ranges():
    runs = [("m0", None, 1), ("m1", served(9100), 2), ("m2", served(9101), 3)]
    with pytest.raises(SpecError) as raised:
        check_probe_ports(runs)
    assert (raised.value.path, raised.value.reason) == (
        "m2.port",
        "ports 9101-9103 overlap m1.port (9100-9101)",
    )


def test_a_probe_after_a_member_without_a_run_table_is_checked_against_every_port():
    db = Probe("db", "tcp", 1, 1, target="localhost:9101")
    runs = [("m0", served(9100), 2), ("m1", None, 1), ("m2", served(None, db), 1)]
    with pytest.raises(SpecError) as raised:
        check_probe_ports(runs)
    assert (raised.value.path, raised.value.reason) == (
        "m2.probes.db",
        "port 9101 is m0's endpoint: a claim is a resource ready before the start, and no "
        "member serves before it (a member's readiness is its application's rendezvous "
        "after the start)",
    )
