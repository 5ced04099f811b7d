"""Plain env values named like secrets are warned about (never refused)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from costart.cli.main import app
from costart.domain import spec_warnings
from costart.domain.spec import spec_from_object


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
