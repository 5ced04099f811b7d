"""schemathesis against a real `costart serve`: every check, every phase, clean.

The server runs on 127.0.0.1 with a real LMDB store and the real placement on the demo
cluster (64 nodes); `st run` drives it with `tests/rest/schemathesis.toml` — all checks,
the examples, coverage, fuzzing and stateful phases, 150 examples per operation — calling
each operation with a token of a role that may call it (owner, admin, claims, agent). The
run must end with no failure and no error, every operation tested, every phase run, and
authorized answers (2xx) reached on the operations the roles own. ADR 0049.

``COSTART_PROFILE=slow`` (``make test-slow``) runs the bigger profile.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import httpx
import pytest

from costart.rest.openapi import SPEC_EXAMPLE
from tests.rest.serving import DEADLINE_S, POLL_S, ROOT, serve_env, serving

CONFIG = ROOT / "tests" / "rest" / "schemathesis.toml"
CLUSTER = ROOT / "scenarios" / "cluster-demo.toml"
NODES = [f"h100-{i:04d}" for i in range(32)] + [f"l40s-{i:04d}" for i in range(32)]
TOKENS = {
    "COSTART_ADMIN_TOKEN": ("root", "admin"),
    "COSTART_OWNER_TOKEN": ("alice", "owner"),
    "COSTART_CLAIMS_TOKEN": ("csi", "claims"),
    "COSTART_AGENT_TOKEN": ("agent-all", "agent"),
}
PHASES = ("examples", "coverage", "fuzzing", "stateful")
# Every check schemathesis 4 has: a config change that drops one fails the run.
CHECKS = {
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    "missing_required_header",
    "unsupported_method",
    "allow_header_conformance",
    "use_after_free",
    "ensure_resource_availability",
    "ignored_auth",
    "object_level_authorization",
}
RUN_TIMEOUT_S = 1500
# Operations an authorized caller must have been answered 2xx on at least once, whatever
# the server's timing: the reads, the submit, the operations on a created group (reached
# through the links from the submit), and each role's own writes (their documented
# examples name the group the test placed). Every other operation must at least have
# been answered past authorization (not only 401 or 403).
MUST_SUCCEED = (
    "GET /healthz",
    "GET /metrics",
    "GET /v1/groups",
    "POST /v1/groups",
    "GET /v1/groups/{name}",
    "GET /v1/groups/{name}/members",
    "GET /v1/groups/{name}/events",
    "GET /v1/groups/{name}/why",
    "POST /v1/groups/{name}/cancel",
    "DELETE /v1/groups/{name}",
    "GET /v1/members",
    "GET /v1/holds",
    "GET /v1/watch",
    # The documented examples, on the placed example group: each role's own operation.
    "POST /v1/groups/{name}/members/{member}/claims/{claim}",
    "POST /v1/groups/{name}/members/{member}/scale",
    "GET /v1/nodes/{node}",
    "GET /v1/nodes/{node}/tasks",
    "POST /v1/nodes/{node}/heartbeat",
    "PUT /v1/nodes/{node}/status",
)
# The run has its own limit (`RUN_TIMEOUT_S`); the suite's default per test is shorter
# than a run on a loaded machine.
pytestmark = pytest.mark.timeout(RUN_TIMEOUT_S + 120)


def _token(env_name: str) -> str:
    return env_name.lower().replace("_", "-") + "-0123456789"


def _tokens_toml() -> str:
    nodes = "[" + ", ".join(f'"{n}"' for n in NODES) + "]"
    lines = []
    for env_name, (user, role) in TOKENS.items():
        lines.append(f'[tokens.{_token(env_name)}]\nuser = "{user}"\nrole = "{role}"')
        if role == "agent":
            lines.append(f"nodes = {nodes}")
    return "\n".join(lines) + "\n"


def _profile_options() -> tuple[str, ...]:
    """The config's 150 examples per operation; the slow profile raises them to 500."""
    return ("--max-examples", "500") if os.environ.get("COSTART_PROFILE") == "slow" else ()


def place_the_example_group(url: str) -> None:
    """The documented example spec, placed and waiting for its claims (nothing reports
    them but schemathesis): the group the documented examples of the per-group and node
    operations name (``grpo-run-42``, ``trainer``, ``gpus``, ``h100-0000``), and the first
    of every list, so the links from a list lead to a placed group's members and nodes."""
    admin = {"Authorization": f"Bearer {_token('COSTART_ADMIN_TOKEN')}"}
    created = httpx.post(f"{url}/v1/groups", json=SPEC_EXAMPLE.value, headers=admin, timeout=10)
    assert created.status_code == 201, created.text
    name = SPEC_EXAMPLE.value["name"]
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        detail = httpx.get(f"{url}/v1/groups/{name}", headers=admin, timeout=10).json()
        if detail["group"]["state"] == "PLACED":
            break
        time.sleep(POLL_S)
    else:
        raise AssertionError(f"{name} never reached PLACED: {detail['group']}")
    members = httpx.get(f"{url}/v1/groups/{name}/members", headers=admin, timeout=10).json()
    trainer = next(m for m in members if m["name"] == "trainer")
    # The node operations' documented example is where the trainer's first task runs.
    assert trainer["tasks"][0]["node"] == "h100-0000", trainer["tasks"]
    assert trainer["attempt"] == 1, trainer


def run_schemathesis(tmp: Path) -> tuple[subprocess.CompletedProcess[str], list[dict], dict]:
    """`st run` against a fresh server: its output, its NDJSON event report, and the
    server's OpenAPI document."""
    env = serve_env(tmp, lmdb=True)
    options = ("--cluster", str(CLUSTER), "--interval", "0.2")
    with serving(tmp, _tokens_toml(), *options, env=env) as (url, log_path, _):
        document = httpx.get(f"{url}/schema/openapi.json", timeout=10).json()
        place_the_example_group(url)
        report = tmp / "events.ndjson"
        run_env = {**env, **{name: _token(name) for name in TOKENS}}
        command = [
            *(sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run"),
            *_profile_options(),
            *("--report", "ndjson", "--report-ndjson-path", str(report)),
            *("--no-color", "--output-truncate", "true"),
            f"{url}/schema/openapi.json",
        ]
        done = subprocess.run(
            command,
            env=run_env,
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        server_log = log_path.read_text()
    if not report.exists():
        raise AssertionError(done.stdout + done.stderr)
    events = [json.loads(line) for line in report.read_text().splitlines() if line.strip()]
    assert "Traceback" not in server_log, server_log[-4000:]
    return done, events, document


class RunSummary:
    """What the NDJSON event report says was sent: requests per phase, and the status
    codes each operation answered (a failed check or an engine error is a defect)."""

    def __init__(self, events: list[dict]) -> None:
        self.requests: Counter[str] = Counter()
        self.statuses: dict[str, set[int]] = defaultdict(set)
        self.operations: set[str] = set()
        self.failed_checks: list[str] = []
        self.errors: list[str] = []
        self.phases: dict[str, str] = {}
        self.checks: set[str] = set()
        for event in events:
            ((kind, body),) = event.items()
            if kind == "PhaseFinished":
                self.phases[body["phase"]["name"]] = body["status"]
            elif kind in ("NonFatalError", "FatalError", "Interrupted"):
                self.errors.append(f"{kind}: {json.dumps(body)[:2000]}")
            elif kind == "ScenarioFinished":
                self._scenario(body)

    def _scenario(self, body: dict) -> None:
        recorder = body["recorder"]
        label = recorder["label"]
        cases = recorder.get("cases", {})
        if body["phase"] in ("coverage", "fuzzing") and body["status"] != "skip":
            self.operations.add(label)
        for case_id, interaction in recorder.get("interactions", {}).items():
            case = cases[case_id]["value"]
            self.requests[body["phase"]] += 1
            if interaction.get("response") is not None:
                operation = f"{case['method']} {case['path']}"
                self.statuses[operation].add(interaction["response"]["status_code"])
        for case_id, checks in recorder.get("checks", {}).items():
            for check in checks:
                self.checks.add(check["name"])
                if check["status"] == "failure":
                    self.failed_checks.append(f"{label} [{case_id}]: {check['name']}")

    def table(self) -> str:
        lines = [f"requests per phase: {dict(sorted(self.requests.items()))}"]
        lines.append(f"operations tested: {len(self.operations)}; statuses answered:")
        lines += [f"  {op}: {sorted(self.statuses[op])}" for op in sorted(self.operations)]
        others = set().union(
            *(codes for op, codes in self.statuses.items() if op not in self.operations)
        )
        lines.append(f"  (methods no operation declares: {sorted(others)})")
        return "\n".join(lines)


@pytest.fixture(scope="module")
def schemathesis_run(tmp_path_factory):
    done, events, document = run_schemathesis(tmp_path_factory.mktemp("schemathesis"))
    summary = RunSummary(events)
    print(summary.table())
    return done, summary, document


def test_schemathesis_finds_nothing_with_every_check_in_every_phase(schemathesis_run):
    done, summary, _ = schemathesis_run
    report = done.stdout[-20000:] + done.stderr[-4000:]
    assert summary.failed_checks == [], report
    assert summary.errors == [], report
    assert done.returncode == 0, report
    assert summary.checks >= CHECKS, sorted(CHECKS - summary.checks)
    phases = {name: summary.phases.get(name) for name in PHASES}
    assert phases == dict.fromkeys(PHASES, "success"), (summary.phases, report)


def test_every_operation_is_exercised_with_authorized_answers(schemathesis_run):
    _, summary, document = schemathesis_run
    declared = {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
        if method != "parameters"
    }
    assert summary.operations == declared, summary.table()
    never_served = [
        op for op in MUST_SUCCEED if not any(200 <= s < 300 for s in summary.statuses[op])
    ]
    assert never_served == [], summary.table()
    only_refused = [
        op for op in sorted(summary.operations) if summary.statuses[op] <= {400, 401, 403}
    ]
    assert only_refused == [], summary.table()
