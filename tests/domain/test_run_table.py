"""The member's run table: validated with errors naming the field, stored, never run."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from costart.domain import events as ev
from costart.domain.errors import SpecError
from costart.domain.run_table import Probe, RunSpec, task_log_path
from costart.domain.spec import parse_spec, spec_from_object
from tests.builders import new_controller


def doc(
    trainer_run: dict[str, Any] | None = None, rollout_run: dict[str, Any] | None = None
) -> dict:
    trainer: dict[str, Any] = {
        "name": "trainer",
        "kind": "job",
        "tasks": 2,
        "shape": {"gpu": 8},
        "claims": ["weights"],
        "task_claims": ["device"],
    }
    rollout: dict[str, Any] = {
        "name": "rollout",
        "kind": "replica-set",
        "replicas": 4,
        "shape": {"gpu": 1},
    }
    if trainer_run is not None:
        trainer["run"] = trainer_run
    if rollout_run is not None:
        rollout["run"] = rollout_run
    return {"name": "grpo", "owner": "alice", "members": [trainer, rollout]}


def run(**fields: Any) -> dict[str, Any]:
    return {"argv": ["python3", "train.py"], **fields}


BAD = [
    (doc(run(argv=[])), "members[0].run.argv", "empty"),
    (doc({"env": {}}), "members[0].run.argv", "missing required field"),
    (doc(run(argv=["", "x"])), "members[0].run.argv[0]", "empty"),
    (doc(run(argv=["a\x00b"])), "members[0].run.argv[0]", "control character"),
    (doc(run(shell=True)), "members[0].run.shell", "unknown field"),
    (doc(run(grace="0s")), "members[0].run.grace", "longer than 0s"),
    (doc(run(grace="-5s")), "members[0].run.grace", "bad duration"),
    (doc(run(grace="10 seconds")), "members[0].run.grace", "bad duration"),
    (doc(run(grace="25h")), "members[0].run.grace", "limit of 24h"),
    (doc(run(cwd="")), "members[0].run.cwd", "empty"),
    (doc(run(log_dir="")), "members[0].run.log_dir", "empty"),
    (doc(run(cwd="/etc")), "members[0].run.cwd", "is absolute"),
    (doc(run(cwd="../../..")), "members[0].run.cwd", "leaves the agent's work root"),
    (doc(run(cwd="a/../../b")), "members[0].run.cwd", "leaves the agent's work root"),
    (doc(run(log_dir="/var/log/x")), "members[0].run.log_dir", "is absolute"),
    (doc(run(log_dir="logs/..")), "members[0].run.log_dir", "leaves the agent's work root"),
    (
        doc(run(probes={"weights": {"file": "/etc/shadow"}})),
        "members[0].run.probes.weights.file",
        "is absolute",
    ),
    (
        doc(run(probes={"weights": {"file": "../../etc/shadow"}})),
        "members[0].run.probes.weights.file",
        "leaves the task's directory",
    ),
    (doc(run(env={"1BAD": "x"})), "members[0].run.env.1BAD", "bad variable name"),
    (doc(run(env={"COSTART_TASK": "7"})), "members[0].run.env.COSTART_TASK", "the agent's"),
    (doc(run(port=0)), "members[0].run.port", "between 1 and 65535"),
    (
        doc(run(env_secrets={"1KEY": "team/key"})),
        "members[0].run.env_secrets.1KEY",
        "bad variable name",
    ),
    (
        doc(run(env_secrets={"COSTART_TOKEN": "team/key"})),
        "members[0].run.env_secrets.COSTART_TOKEN",
        "the agent's",
    ),
    (
        doc(run(env={"API_KEY": "x"}, env_secrets={"API_KEY": "team/key"})),
        "members[0].run.env_secrets.API_KEY",
        "also set in env",
    ),
    (
        doc(run(env_secrets={"API_KEY": "../bob/key"})),
        "members[0].run.env_secrets.API_KEY",
        "bad secret reference",
    ),
    (
        doc(run(env_secrets={"API_KEY": "/etc/shadow"})),
        "members[0].run.env_secrets.API_KEY",
        "bad secret reference",
    ),
    (
        doc(run(env_secrets={"API_KEY": "team/./key"})),
        "members[0].run.env_secrets.API_KEY",
        "bad secret reference",
    ),
    (
        doc(run(env_secrets={"API_KEY": "team/key\n"})),
        "members[0].run.env_secrets.API_KEY",
        "bad secret reference",
    ),
    (
        doc(run(env_secrets={"API_KEY": "k" * 120 + "/" + "k" * 120 + "/" + "k" * 20})),
        "members[0].run.env_secrets.API_KEY",
        "at most 256",
    ),
    (doc(run(port=65535)), "members[0].run.port", "would pass 65535"),
    (
        doc(run(port=9100), {"argv": ["r"], "port": 9101}),
        "members[1].run.port",
        "overlap members[0].run.port",
    ),
    (doc(run(probes={"gpus": {"file": "/x"}})), "members[0].run.probes.gpus", "not a claim"),
    (doc(run(probes={"weights": {}})), "members[0].run.probes.weights", "got none"),
    (
        doc(run(probes={"weights": {"file": "/x", "tcp": "db:5432"}})),
        "members[0].run.probes.weights",
        "got tcp and file",
    ),
    (
        doc(run(probes={"weights": {"file": "/x", "period": "0s"}})),
        "members[0].run.probes.weights.period",
        "longer than 0s",
    ),
    (
        doc(run(probes={"weights": {"file": "/x", "timeout": "0ms"}})),
        "members[0].run.probes.weights.timeout",
        "longer than 0s",
    ),
    (
        doc(run(probes={"weights": {"file": "/x", "fail_after": -1}})),
        "members[0].run.probes.weights.fail_after",
        "between 0 and",
    ),
    (
        doc(run(probes={"weights": {"exec": []}})),
        "members[0].run.probes.weights.exec",
        "empty",
    ),
    (
        doc(run(probes={"weights": {"http": "ftp://store/weights"}})),
        "members[0].run.probes.weights.http",
        "bad URL",
    ),
    (
        doc(run(probes={"weights": {"http": "http://:80/x"}})),
        "members[0].run.probes.weights.http",
        "bad URL",
    ),
    (
        doc(run(probes={"weights": {"tcp": "db"}})),
        "members[0].run.probes.weights.tcp",
        "expected HOST:PORT",
    ),
    (
        doc(run(probes={"weights": {"tcp": "db:70000"}})),
        "members[0].run.probes.weights.tcp",
        "port must be between",
    ),
    (
        doc(run(probes={"weights": {"tcp": "db:5432\n"}})),
        "members[0].run.probes.weights.tcp",
        "expected HOST:PORT",
    ),
    (
        doc(run(probes={"weights": {"http": "http://169.254.169.254/latest/meta-data/"}})),
        "members[0].run.probes.weights.http",
        "is a cloud metadata address: no probe may reach",
    ),
    (
        doc(
            run(probes={"weights": {"http": "http://metadata.google.internal/computeMetadata/v1/"}})
        ),
        "members[0].run.probes.weights.http",
        "is a cloud metadata host name: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"http": "https://[fe80::1%25eth0]:8443/ready"}})),
        "members[0].run.probes.weights.http",
        "is a link-local address: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"http": "http://[::ffff:169.254.169.254]/"}})),
        "members[0].run.probes.weights.http",
        "is a cloud metadata address: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"http": "http://100.100.100.200/latest/meta-data/"}})),
        "members[0].run.probes.weights.http",
        "is a cloud metadata address: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"tcp": "169.254.0.1:22"}})),
        "members[0].run.probes.weights.tcp",
        "is a link-local address: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"tcp": "[fd00:ec2::254]:80"}})),
        "members[0].run.probes.weights.tcp",
        "is a cloud metadata address: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"tcp": "2852039166:80"}})),
        "members[0].run.probes.weights.tcp",
        "is a cloud metadata address: no probe may reach",
    ),
    (
        doc(run(probes={"weights": {"tcp": "Instance-Data.:80"}})),
        "members[0].run.probes.weights.tcp",
        "is a cloud metadata host name: no probe may reach",
    ),
    (
        doc(run(port=9100, probes={"weights": {"http": "http://127.0.0.1:9101/ready"}})),
        "members[0].run.probes.weights",
        "the member's own endpoint",
    ),
    (
        doc(run(port=9100, probes={"device": {"tcp": "localhost:9100"}})),
        "members[0].run.probes.device",
        "the member's own endpoint",
    ),
    (
        doc(run(probes={"weights": {"tcp": "rollout-0:9203"}}), {"argv": ["r"], "port": 9200}),
        "members[0].run.probes.weights",
        "members[1].run's endpoint",
    ),
]


@pytest.mark.parametrize(("spec", "path", "reason"), BAD, ids=[f"{b[1]}:{b[2]}" for b in BAD])
def test_a_bad_run_table_names_the_field_and_writes_nothing(spec, path, reason):
    controller = new_controller()
    with pytest.raises(SpecError) as raised:
        controller.submit_document(json.dumps(spec), "json")
    assert raised.value.path == path
    assert reason in raised.value.reason
    assert controller.recorder.max_notification_id() is None


def test_a_run_table_is_normalized_with_explicit_defaults_and_sorted_parts():
    spec = spec_from_object(
        doc(
            run(
                env={"ZED": "1", "ALPHA": "2"},
                probes={
                    "weights": {"file": "data/w.bin", "period": "500ms"},
                    "device": {"exec": ["nvidia-smi", "-L"], "timeout": "3s", "fail_after": 2},
                },
            )
        )
    )
    trainer = spec.member("trainer").run
    assert trainer == RunSpec(
        argv=("python3", "train.py"),
        grace_ns=10 * 10**9,
        log_dir="costart-logs",
        env=(("ALPHA", "2"), ("ZED", "1")),
        probes=(
            Probe("device", "exec", 10**9, 3 * 10**9, argv=("nvidia-smi", "-L"), fail_after=2),
            Probe("weights", "file", 500 * 10**6, 10**9, target="data/w.bin"),
        ),
    )
    assert spec.member("rollout").run is None


def test_secrets_are_stored_as_references_sorted_by_name_and_never_as_values():
    spec = spec_from_object(
        doc(run(env={"MODE": "fast"}, env_secrets={"ZED_KEY": "team-a/z", "API_KEY": "openai"}))
    )
    trainer = spec.member("trainer").run
    assert trainer is not None
    assert trainer.secrets == (("API_KEY", "openai"), ("ZED_KEY", "team-a/z"))
    assert trainer.env == (("MODE", "fast"),)
    # Without secrets the field is left out of the bytes, as before it existed.
    encoded = msgspec.json.encode(spec_from_object(doc(run())))
    assert b'"secrets"' not in encoded


def test_a_probe_of_another_host_on_a_free_port_is_a_pre_start_resource():
    spec = spec_from_object(
        doc(run(port=9100, probes={"weights": {"http": "https://models.internal/w"}}))
    )
    probe = spec.member("trainer").run.probe("weights")  # type: ignore[union-attr]
    assert (probe.kind, probe.target) == ("http", "https://models.internal/w")


def test_a_spec_without_run_tables_encodes_exactly_as_before():
    # The bytes GroupSubmitted carries for a spec without `run`: no trace of the field.
    spec = spec_from_object(doc())
    encoded = msgspec.json.encode(spec)
    assert b'"run"' not in encoded
    assert msgspec.json.decode(encoded, type=type(spec)) == spec


def test_the_run_table_is_stored_in_the_log_and_shown_in_the_member_view():
    controller = new_controller()
    controller.submit_document(json.dumps(doc(run(port=9100))), "json")
    submitted = [e for _, e in controller.read_events() if isinstance(e, ev.GroupSubmitted)]
    assert submitted[0].spec.member("trainer").run == RunSpec(
        argv=("python3", "train.py"), grace_ns=10 * 10**9, log_dir="costart-logs", port=9100
    )


def test_toml_run_tables_read_as_the_json_ones():
    toml = b"""
name = "grpo"
owner = "alice"
[[members]]
name = "trainer"
kind = "job"
shape = { cpu = 1 }
claims = ["weights"]
[members.run]
argv = ["python3", "train.py"]
grace = "2s"
[members.run.probes.weights]
file = "data/w.bin"
"""
    spec = parse_spec(toml, "toml")
    trainer = spec.member("trainer").run
    assert trainer is not None
    assert trainer.grace_ns == 2 * 10**9
    assert trainer.probes == (Probe("weights", "file", 10**9, 10**9, target="data/w.bin"),)


def test_each_task_and_attempt_has_its_own_log_file():
    spec = spec_from_object(doc(run(log_dir="logs/costart")))
    trainer = spec.member("trainer").run
    assert trainer is not None
    paths = {
        task_log_path(trainer, "grpo", "gid", "trainer", task, attempt)
        for task in (0, 1)
        for attempt in (1, 2)
    }
    assert len(paths) == 4
    assert task_log_path(trainer, "grpo", "gid", "trainer", 1, 2) == (
        "logs/costart/grpo-gid/trainer/1.attempt-2.log"
    )
