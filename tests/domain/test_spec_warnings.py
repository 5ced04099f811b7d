"""Plain env values named like secrets are warned about (never refused)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from costart.cli.main import app
from costart.domain import spec_warnings
from costart.domain.spec import parse_spec_warned, spec_from_object


def spec_with_env(env: dict[str, str]) -> dict:
    return {
        "name": "g",
        "owner": "alice",
        "members": [
            {"name": "a", "kind": "job", "tasks": 1, "shape": {"cpu": 1}},
            {
                "name": "b",
                "kind": "job",
                "tasks": 1,
                "shape": {"cpu": 1},
                "run": {"argv": ["x"], "env": env},
            },
        ],
    }


def test_secret_shaped_names_with_values_are_named_by_field():
    env = {
        "OPENAI_API_KEY": "sk-1",
        "HF_TOKEN": "hf_1",
        "DB_PASSWORD": "p",
        "password": "p",
        "AWS_SECRET": "s",
        "EMPTY_TOKEN": "",
        "MONKEY": "1",
        "KEYBOARD": "us",
        "SSH_KEY_PATH": "/x",
        "PWD": "/home",
        "TOKENIZER": "bpe",
    }
    warnings = spec_warnings(spec_from_object(spec_with_env(env)))
    named = sorted(w.split(":")[0] for w in warnings)
    assert named == [
        "members[1].run.env.AWS_SECRET",
        "members[1].run.env.DB_PASSWORD",
        "members[1].run.env.HF_TOKEN",
        "members[1].run.env.OPENAI_API_KEY",
        "members[1].run.env.password",
    ]
    assert all("env_secrets" in w for w in warnings)


def test_validate_warns_and_still_passes(tmp_path):
    path = tmp_path / "g.json"

    path.write_text(json.dumps(spec_with_env({"HF_TOKEN": "hf_1"})))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning: members[1].run.env.HF_TOKEN: looks like a secret" in result.output
    assert "g: valid" in result.output


# Budgets, min_running and the barrier against probes (ADR 0071).
ISSUE_SPEC = """
name = "grpo"
owner = "alice"
[[failure.rules]]
members = ["rollout"]
action = "restart-member"
[[members]]
name = "trainer"
kind = "job"
tasks = 1
shape = { gpu = 8 }
[[members]]
name = "rollout"
kind = "replica-set"
replicas = 8
min_running = 6
shape = { gpu = 1 }
"""


def warned(text: str) -> list[str]:
    return parse_spec_warned(text, "toml")[1]


def test_a_restart_rule_without_a_budget_and_a_min_running_never_kept_are_named():
    assert warned(ISSUE_SPEC) == [
        "failure.rules[0].max_restarts: not set: restart-member restarts each member it "
        "covers 3 times (the default), then fails the group; set max_restarts to say how "
        "many (0: none)",
        "members[1].min_running: 6 of 8 replicas, but no failure rule tolerates a failure "
        "of rollout: it never runs with fewer; a failure restarts it or fails the group "
        "(add a rule with action = 'tolerate' to keep running with fewer)",
    ]


def test_a_spec_that_says_what_it_means_gets_no_warning():
    said = ISSUE_SPEC.replace('action = "restart-member"', 'action = "tolerate"')
    assert warned(said) == []
    assert (
        warned(
            ISSUE_SPEC.replace("min_running = 6\n", "").replace(
                'action = "restart-member"', 'action = "restart-member"\nmax_restarts = 2'
            )
        )
        == []
    )


def test_a_zero_budget_acts_as_fail_group_and_says_so():
    zero = ISSUE_SPEC.replace("min_running = 6\n", "").replace(
        'action = "restart-member"', 'action = "restart-member"\nmax_restarts = 0'
    )
    assert warned(zero) == [
        "failure.rules[0].max_restarts: 0 allows no restart: the first failure this rule "
        "catches fails the group (as fail-group would)"
    ]
    group = ISSUE_SPEC.replace("min_running = 6\n", "").replace(
        'action = "restart-member"', 'action = "restart-group"'
    )
    assert warned(group) == [
        "failure.max_group_restarts: not set: restart-group restarts the group 3 times "
        "(the default), then fails it; set max_group_restarts to say how many (0: none)"
    ]
    spent = group.replace(
        "[[failure.rules]]", "[failure]\nmax_group_restarts = 0\n[[failure.rules]]"
    )
    assert warned(spent) == [
        "failure.max_group_restarts: 0 allows no restart: restart-group fails the group at "
        "its first failure"
    ]


def test_tolerating_a_set_whose_min_running_is_all_of_it_fails_anyway():
    text = ISSUE_SPEC.replace("min_running = 6\n", "").replace(
        'action = "restart-member"', 'action = "tolerate"'
    )
    assert warned(text) == [
        "members[1].min_running: all 8 replicas, so a tolerated failure of rollout leaves "
        "it below min_running and fails the group (set min_running lower to tolerate it)"
    ]


def test_a_barrier_shorter_than_a_probe_period_is_named():
    text = """
name = "g"
owner = "alice"
[barrier]
timeout = "30s"
[[members]]
name = "trainer"
kind = "job"
tasks = 1
shape = { cpu = 1 }
claims = ["weights"]
[members.run]
argv = ["python3", "train.py"]
[members.run.probes.weights]
file = "weights.bin"
period = "1m"
"""
    assert warned(text) == [
        "barrier.timeout: 30s is shorter than the period of members[0].run.probes.weights "
        "(1m): the probe looks at most once before the barrier times out and releases "
        "the group"
    ]
    assert warned(text.replace('period = "1m"', 'period = "5s"')) == []


def test_validate_prints_each_warning_and_the_spec_stays_valid(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text(ISSUE_SPEC)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert "warning: failure.rules[0].max_restarts: not set:" in result.output
    assert "warning: members[1].min_running: 6 of 8 replicas" in result.output
    assert "grpo: valid" in result.output


def test_a_default_restart_member_without_a_budget_is_named():
    text = (
        ISSUE_SPEC.replace("min_running = 6\n", "")
        .replace("[[failure.rules]]", '[failure]\ndefault = "restart-member"\n[[failure.rules]]')
        .replace('action = "restart-member"', 'action = "restart-member"\nmax_restarts = 1')
    )
    assert warned(text) == [
        "failure.default_max_restarts: not set: the default action restart-member restarts "
        "each member 3 times (the default), then fails the group; set default_max_restarts "
        "to say how many (0: none)"
    ]
    zero = text.replace("[failure]\n", "[failure]\ndefault_max_restarts = 0\n")
    assert warned(zero) == [
        "failure.default_max_restarts: 0 allows no restart: a failure no rule catches fails "
        "the group (as fail-group would)"
    ]
