"""`costart get groups -l key=value` and labels in `-o wide` and `describe`."""

from __future__ import annotations

from costart.cli.exits import EXIT_USAGE
from costart.cli.main import DEMO_SPEC
from tests.cli.test_operator_output import (
    costart,
    lines,
    reserving_store,  # noqa: F401  (the fixture)
)


def test_get_groups_by_label_selector_and_labels_shown(reserving_store, tmp_path):  # noqa: F811
    store = str(reserving_store)
    labelled = tmp_path / "labelled.toml"
    labelled.write_text(
        DEMO_SPEC.read_text().replace(
            'name = "grpo-run-42"', 'name = "grpo-run-43"\nlabels = { team = "rl", env = "prod" }'
        )
    )
    assert costart("--store", store, "submit", "--create", str(labelled)).exit_code == 0
    picked = costart("--store", store, "get", "groups", "-l", "team=rl", "-o", "name")
    assert picked.stdout == "group/grpo-run-43\n"
    both = costart("--store", store, "get", "groups", "-l", "team=rl,env=prod", "-l", "env=prod")
    assert [line.split()[0] for line in lines(both.stdout)] == ["NAME", "grpo-run-43"]
    none = costart("--store", store, "get", "groups", "-l", "team=sl", "-o", "name")
    assert none.exit_code == 0 and none.stdout == ""
    shown = lines(costart("--store", store, "get", "groups", "--show-labels").stdout)
    rows = [row for row in shown if not row.startswith(" ")]  # not a wrapped reason's line
    assert [row.split()[-1] for row in rows] == ["LABELS", "-", "env=prod,team=rl"]
    described = lines(costart("--store", store, "describe", "group", "grpo-run-43").stdout)
    assert described[:3] == [
        "Name:       grpo-run-43",
        "Owner:      alice",
        "Labels:     env=prod,team=rl",
    ]
    as_json = costart(
        "--store", store, "get", "groups", "grpo-run-43", "-o", "jsonpath={.items[0].labels.team}"
    )
    assert as_json.stdout == "rl\n"


def test_a_bad_selector_is_a_usage_error_naming_the_term(reserving_store):  # noqa: F811
    for term, why in [
        ("team in rl", ""),
        ("team in ()", " (an empty set)"),
        ("te am=rl", ""),
        ("team=r@l", " ('r@l' is not a label key or value)"),
    ]:
        bad = costart("--store", str(reserving_store), "get", "groups", "-l", term)
        assert bad.exit_code == EXIT_USAGE, (term, bad.output)
        assert lines(bad.stderr) == [
            f"error: bad label selector {term!r}{why}: expected key=value, key!=value, "
            "key in (a,b), key notin (a,b), key or !key"
        ]
