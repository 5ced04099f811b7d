"""`costart explain FIELD.PATH` prints the spec reference's entry for one field."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from costart.cli.main import app
from costart.domain.spec_reference import spec_fields

runner = CliRunner()


def explain(path: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["explain", path])
    return result.exit_code, result.stdout, result.stderr


def test_the_issue_s_path_prints_the_restart_budget_reference() -> None:
    code, out, err = explain("members.failure.max_restarts")
    assert code == 0
    assert "failure.rules.max_restarts is the one named so" in err
    assert out.splitlines()[0] == "FIELD:    failure.rules.max_restarts <integer>"
    assert "DEFAULT:  3" in out and "LIMIT:    0-1000" in out
    assert "escalates to fail-group" in out
    assert "-> failure.rules[0].max_restarts: must be between 0 and 1000 (got -1)" in out


def test_indexes_and_the_user_s_keys_name_the_field() -> None:
    code, out, _ = explain("members[2].run.probes.weights.period")
    assert code == 0
    assert out.startswith("FIELD:    members.run.probes.<claim>.period <string>")
    assert 'DEFAULT:  "1s"' in out


def test_a_table_lists_its_fields() -> None:
    code, out, _ = explain("placement")
    assert code == 0
    fields = out.split("FIELDS:\n", 1)[1].split()
    assert {"mode", "timeout", "backoff", "backoff_max", "max_attempts", "topology"} <= set(fields)
    assert "level" not in fields  # one step down only


def test_an_unknown_path_is_one_line_with_near_matches() -> None:
    code, out, err = explain("members.shap")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert err.startswith("error: 'members.shap' is no field of a group spec; near: members.shape")


def test_every_field_explains() -> None:
    for field in spec_fields():
        code, out, _ = explain(field.path)
        assert code == 0, field.path
        assert out.startswith(f"FIELD:    {field.path} <")


def test_the_command_line_starts_without_the_reference() -> None:
    """Lazy: `costart --help` does not import the reference modules."""
    probe = (
        "import sys; from costart.cli import main; "
        "print(sorted(m for m in sys.modules if m.endswith(('spec_reference', 'explain_cmd'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
